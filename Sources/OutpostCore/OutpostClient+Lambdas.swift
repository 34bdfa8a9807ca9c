import Foundation

/// The arguments of a lambda call: positional (a JSON array) or named (a JSON object).
public enum LambdaArguments: Sendable, Hashable {
    case positional([JSONValue])
    case named([String: JSONValue])

    var json: JSONValue {
        switch self {
        case .positional(let values): return .array(values)
        case .named(let values): return .object(values)
        }
    }
}

extension OutpostClient {
    /// Calls a remote function and returns its untyped result.
    ///
    /// Sends `POST /lambdas/{name}` with `{"args": ...}` and returns the reply's `result`.
    ///
    /// - Throws: ``OutpostError`` with ``OutpostError/Code/malformedResult`` when the reply has no
    ///   `result`, ``OutpostError/Code/httpStatus`` with the server's code when the lambda failed.
    public func callLambda(_ name: String, arguments: LambdaArguments = .positional([])) async throws -> JSONValue {
        let reply = try await send(lambdaRequest(name, args: arguments.json), operationName: name)
        guard case .object(let object) = try reply.json(), let result = object["result"] else {
            throw Self.malformedResult(name)
        }
        return result
    }

    /// Calls a remote function with positional arguments.
    public func callLambda(_ name: String, _ arguments: JSONValue...) async throws -> JSONValue {
        try await callLambda(name, arguments: .positional(arguments))
    }

    /// Calls a remote function with typed arguments and decodes its result.
    ///
    /// `arguments` must encode as a JSON array (positional) or object (named).
    public func callLambda<Arguments: Encodable & Sendable, Result: Decodable>(
        _ name: String, arguments: Arguments, as type: Result.Type
    ) async throws -> Result {
        let path = Self.lambdaPath(name)
        let encoded: JSONValue
        do {
            encoded = try JSONValue(encoding: arguments, encoder: configuration.encoder)
        } catch {
            throw OutpostError(
                .encodingFailed, "The arguments of lambda '\(name)' could not be encoded: \(error)", method: "POST", path: path,
                underlying: error)
        }
        switch encoded {
        case .array, .object: break
        default:
            throw OutpostError(
                .invalidRequest, "The arguments of lambda '\(name)' encode as \(encoded), not as an array or object",
                suggestion: "Pass an array for positional arguments or a struct/dictionary for named ones",
                method: "POST", path: path)
        }
        let reply = try await send(lambdaRequest(name, args: encoded), operationName: name)
        do {
            return try configuration.decoder.decode(LambdaReply<Result>.self, from: reply.body).result
        } catch LambdaReplyError.missingResult {
            throw Self.malformedResult(name)
        } catch {
            return try decode(LambdaReply<Result>.self, from: reply, method: "POST", path: path).result
        }
    }

    func lambdaRequest(_ name: String, args: JSONValue) -> Request {
        Request(method: .post, path: Self.lambdaPath(name), body: .json(["args": args]))
    }

    static func lambdaPath(_ name: String) -> String {
        "/lambdas/" + Request.pathSegment(name)
    }

    static func malformedResult(_ name: String) -> OutpostError {
        OutpostError(
            .malformedResult, "The reply of lambda '\(name)' has no 'result'",
            suggestion: "The server must answer {\"result\": ...}; check that the URL points at an Outpost-compatible server",
            method: "POST", path: lambdaPath(name))
    }
}

enum LambdaReplyError: Error { case missingResult }

/// `{"result": ...}`, where a missing `result` is distinguished from a mistyped one.
struct LambdaReply<Result: Decodable>: Decodable {
    var result: Result

    enum CodingKeys: String, CodingKey { case result }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        guard container.contains(.result) else { throw LambdaReplyError.missingResult }
        result = try container.decode(Result.self, forKey: .result)
    }
}
