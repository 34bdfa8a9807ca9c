import Foundation
import HTTPTypes
import Hummingbird
import Logging
@_spi(OutpostInternal) import OutpostCore

/// `POST /lambdas/{name}` and `POST /handlers/{name}`.
struct PluginRoutes: Sendable {
    let lambdas: [String: LambdaBody]
    let handlers: [String: HandlerBody]
    let configuration: ServerConfiguration
    let storage: any Storage
    let auth: AuthService
    /// Gives each call its ``RecordData``.
    let actions: RecordActions

    func add(to router: Router<OutpostRequestContext>) {
        // Another Authorization scheme is left to the plugin, which sees it in the headers.
        let router = router.group().add(middleware: AuthenticationMiddleware(auth: auth, otherSchemes: .leftToRoute))
        router.post("/lambdas/{name}") { request, context in
            try await callLambda(request, context: context)
        }
        router.post("/handlers/{name}") { request, context in
            try await callHandler(request, context: context)
        }
    }

    func callLambda(_ request: Request, context: OutpostRequestContext) async throws -> Response {
        let name = try context.pathParameter("name") ?? ""
        guard let lambda = lambdas[name] else {
            throw ServerError.notFound(
                "unknown_lambda", "No lambda named '\(name)'\(await known(lambdas.keys, context: context))")
        }
        let (caller, key) = try callerAndKey(request, context)
        let data = try await request.collectBody(limit: configuration.maxBodyBytes)
        let body = try Request.parseJSON(data, maxDepth: configuration.maxJSONDepth, maxKeys: configuration.maxJSONKeys)
        let arguments: LambdaArguments
        switch body {
        case .null: arguments = .positional([])
        case .object(let object):
            switch object["args"] {
            case nil, .null?: arguments = .positional([])
            case .array(let values)?: arguments = .positional(values)
            case .object(let values)?: arguments = .named(values)
            case let other?:
                throw ServerError.badRequest(
                    "invalid_arguments", "'args' must be an array (positional) or an object (named), not \(other)")
            }
        default:
            throw ServerError.badRequest("invalid_arguments", "Send {\"args\": [...]} or {\"args\": {...}}")
        }
        var logger = context.logger
        logger[metadataKey: "lambda"] = "\(name)"
        let call = LambdaCall(
            name: name, arguments: arguments, logger: logger, caller: Self.identity(caller),
            data: RecordData(actions: actions, actor: .request(caller)))
        return try await once(request, caller: caller, key: key, body: data) {
            let result = try await run("lambda", name, logger: logger) { try await lambda(call) }
            return Idempotency.stored(
                status: .ok, headers: [.contentType: "application/json"],
                body: JSONValue.object(["result": result]).jsonData())
        }
    }

    func callHandler(_ request: Request, context: OutpostRequestContext) async throws -> Response {
        let name = try context.pathParameter("name") ?? ""
        guard let handler = handlers[name] else {
            throw ServerError.notFound(
                "unknown_handler", "No handler named '\(name)'\(await known(handlers.keys, context: context))")
        }
        let (caller, key) = try callerAndKey(request, context)
        let data = try await request.collectBody(limit: configuration.maxBodyBytes)
        let body = try Request.parseJSON(data, maxDepth: configuration.maxJSONDepth, maxKeys: configuration.maxJSONKeys)
        var logger = context.logger
        logger[metadataKey: "handler"] = "\(name)"
        let call = HandlerCall(
            name: name, body: body, headers: request.headers, logger: logger, caller: Self.identity(caller),
            data: RecordData(actions: actions, actor: .request(caller)))
        return try await once(request, caller: caller, key: key, body: data) {
            let reply = try await run("handler", name, logger: logger) { try await handler(call) }
            var headers = reply.headers
            switch reply.body {
            case .json(let value):
                headers[.contentType] = "application/json"
                return Idempotency.stored(status: reply.status, headers: headers, body: value.jsonData())
            case .bytes(let data, let contentType):
                headers[.contentType] = contentType
                return Idempotency.stored(status: reply.status, headers: headers, body: data)
            }
        }
    }

    /// The end of an unknown-name message: the names the server has, when it runs with `--demo`
    /// (``ServerConfiguration/listsPluginNames``) or the caller is a signed-in user with the role
    /// `admin`; otherwise a hint to ask the operator, so that a caller cannot list what the server runs.
    func known(_ names: some Collection<String>, context: OutpostRequestContext) async -> String {
        var lists = configuration.listsPluginNames
        if !lists, let user = (try? context.caller)?.userID, let roles = try? await storage.roles(userID: user) {
            lists = roles.contains("admin")
        }
        guard lists else { return "; ask the server's operator for the names it has" }
        return "; the server has: " + (names.isEmpty ? "none" : names.sorted().joined(separator: ", "))
    }

    /// The caller (an invalid bearer token is 401) and the request's `Idempotency-Key`, if any.
    func callerAndKey(_ request: Request, _ context: OutpostRequestContext) throws -> (AuthenticatedCaller?, String?) {
        (try context.caller, try Idempotency.key(of: request))
    }

    static func identity(_ caller: AuthenticatedCaller?) -> CallerIdentity? {
        caller.map {
            CallerIdentity(userID: $0.userID, clientID: $0.clientID, scopes: $0.scope.split(separator: " ").map(String.init))
        }
    }

    /// Runs `body` once per (caller, key): a repeat gets the kept response, a repeat while the first
    /// runs gets 409 `idempotency_in_progress`, another request with the key 422. Without a key,
    /// just runs it.
    func once(
        _ request: Request, caller: AuthenticatedCaller?, key: String?, body data: Data,
        _ body: () async throws -> StoredResponse
    ) async throws -> Response {
        guard let key else { return Idempotency.response(try await body(), replayed: false) }
        let scoped = IdempotencyKey(
            caller: Idempotency.caller(caller), key: key, fingerprint: Idempotency.fingerprint(request, body: data))
        // A claim outlives the plugin's time limit, so only a claim whose server stopped is taken over.
        let lease = configuration.lambdaTimeout + .seconds(5)
        let claim = try await storage.claimIdempotencyKey(scoped, lease: lease, lifetime: Idempotency.lifetime)
        guard case .claimed(let token) = claim else {
            if case .replay(let stored) = claim { return Idempotency.response(stored, replayed: true) }
            throw Idempotency.failure(claim)
                ?? ServerError(
                    .internalServerError, code: "idempotency_failed", message: "The Idempotency-Key could not be used; retry")
        }
        let response: StoredResponse
        do {
            response = try await body()
        } catch {
            try? await storage.releaseIdempotencyKey(scoped, token: token)
            throw error
        }
        if Idempotency.keeps(response.status) {
            try await storage.completeIdempotencyKey(scoped, token: token, response: response, lifetime: Idempotency.lifetime)
        } else {
            try await storage.releaseIdempotencyKey(scoped, token: token)
        }
        return Idempotency.response(response, replayed: false)
    }

    /// Runs plugin code with the time limit, turning its failures into clean replies.
    func run<T: Sendable>(
        _ kind: String, _ name: String, logger: Logger, _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let limit = configuration.lambdaTimeout
        do {
            return try await withDeadline(
                limit,
                onTimeout: {
                    ServerError(
                        .gatewayTimeout, code: "lambda_timeout",
                        message:
                            "The \(kind) '\(name)' ran longer than \(limit) and was stopped; make it faster or raise the server's lambda timeout"
                    )
                }, body)
        } catch let error as ServerError {
            if error.code == "lambda_timeout" { logger.warning("\(kind) timed out") }
            throw error
        } catch is CancellationError {
            throw ServerError(.serviceUnavailable, code: "cancelled", message: "The request was cancelled")
        } catch {
            logger.error("\(kind) failed", metadata: ["error": "\(error)"])
            throw ServerError(
                .internalServerError, code: "\(kind)_failed",
                message: "The \(kind) '\(name)' failed; the server's log has the details")
        }
    }
}
