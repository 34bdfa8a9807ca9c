import Foundation
import HTTPTypes
import Hummingbird
import Logging
import OutpostCore

/// `POST /lambdas/{name}` and `POST /handlers/{name}`.
struct PluginRoutes: Sendable {
    let lambdas: [String: LambdaBody]
    let handlers: [String: HandlerBody]
    let configuration: ServerConfiguration

    func add(to router: Router<OutpostRequestContext>) {
        router.post("/lambdas/{name}") { request, context in
            try await callLambda(request, context: context)
        }
        router.post("/handlers/{name}") { request, context in
            try await callHandler(request, context: context)
        }
    }

    func callLambda(_ request: Request, context: OutpostRequestContext) async throws -> Response {
        let name = try context.parameters.require("name")
        guard let lambda = lambdas[name] else {
            throw ServerError.notFound(
                "unknown_lambda", "No lambda named '\(name)'; the server has: \(lambdas.keys.sorted().joined(separator: ", "))")
        }
        let body = try await request.decodeJSON(limit: configuration.maxBodyBytes, maxDepth: configuration.maxJSONDepth)
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
        let call = LambdaCall(name: name, arguments: arguments, logger: logger)
        let result = try await run("lambda", name, logger: logger) { try await lambda(call) }
        return Response.json(["result": result])
    }

    func callHandler(_ request: Request, context: OutpostRequestContext) async throws -> Response {
        let name = try context.parameters.require("name")
        guard let handler = handlers[name] else {
            throw ServerError.notFound(
                "unknown_handler", "No handler named '\(name)'; the server has: \(handlers.keys.sorted().joined(separator: ", "))"
            )
        }
        let body = try await request.decodeJSON(limit: configuration.maxBodyBytes, maxDepth: configuration.maxJSONDepth)
        var logger = context.logger
        logger[metadataKey: "handler"] = "\(name)"
        let call = HandlerCall(name: name, body: body, headers: request.headers, logger: logger)
        let reply = try await run("handler", name, logger: logger) { try await handler(call) }
        switch reply.body {
        case .json(let value): return Response.json(value, status: reply.status, headers: reply.headers)
        case .bytes(let data, let contentType):
            return Response.bytes(data, contentType: contentType, status: reply.status, headers: reply.headers)
        }
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
