public import HTTPTypes
@_spi(OutpostInternal) public import OutpostCore

/// The one error type of the reference server, rendered as
/// `{"error": {"code": ..., "message": ..., "details": ...}}` with its status.
///
/// Plugins throw it from lambdas and handlers to choose the status and code the client sees; any
/// other error becomes a 500 whose message does not leak internals.
public struct ServerError: Error, Sendable, CustomStringConvertible {
    public var status: HTTPResponse.Status
    /// A stable, machine-readable code in snake case, e.g. `unknown_time_zone`.
    public var code: String
    /// What went wrong and what to do, for a person.
    public var message: String
    public var details: JSONValue?
    /// Extra response header fields, e.g. `Retry-After`.
    public var headers: HTTPFields

    public init(
        _ status: HTTPResponse.Status, code: String, message: String, details: JSONValue? = nil, headers: HTTPFields = [:]
    ) {
        self.status = status
        self.code = code
        self.message = message
        self.details = details
        self.headers = headers
    }

    public var description: String { "\(status.code) \(code): \(message)" }

    var envelope: JSONValue {
        var error: [String: JSONValue] = ["code": .string(code), "message": .string(message)]
        if let details { error["details"] = details }
        return ["error": .object(error)]
    }

    public static func badRequest(_ code: String, _ message: String, details: JSONValue? = nil) -> ServerError {
        ServerError(.badRequest, code: code, message: message, details: details)
    }

    public static func notFound(_ code: String, _ message: String) -> ServerError {
        ServerError(.notFound, code: code, message: message)
    }
}
