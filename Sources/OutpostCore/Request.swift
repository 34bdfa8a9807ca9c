public import Foundation
public import HTTPTypes

/// One HTTP request, relative to the client's base URL.
///
/// ```swift
/// let request = Request.post("/handlers/time", json: ["zone": "Europe/Paris"])
/// let reply = try await client.send(request, decoding: TimeReply.self)
/// ```
public struct Request: Sendable {
    /// A request body: raw bytes with their content type, untyped JSON, or an `Encodable` value that
    /// the client encodes with its configured encoder.
    public enum Body: Sendable {
        case data(Data, contentType: String)
        case json(JSONValue)
        case encodable(any Encodable & Sendable)
    }

    public var method: HTTPRequest.Method
    /// A path relative to the base URL (`/lambdas/x`), or an absolute `http(s)` URL, such as a
    /// `next` link from a list response.
    public var path: String
    public var query: [URLQueryItem]
    public var headers: HTTPFields
    public var body: Body?
    /// Overrides the client's timeout for this request.
    public var timeout: Duration?

    public init(
        method: HTTPRequest.Method, path: String, query: [URLQueryItem] = [], headers: HTTPFields = [:],
        body: Body? = nil, timeout: Duration? = nil
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.timeout = timeout
    }

    public static func get(_ path: String, query: [URLQueryItem] = []) -> Request {
        Request(method: .get, path: path, query: query)
    }

    public static func delete(_ path: String) -> Request {
        Request(method: .delete, path: path)
    }

    public static func post(_ path: String, json: JSONValue) -> Request {
        Request(method: .post, path: path, body: .json(json))
    }

    public static func post(_ path: String, body: some Encodable & Sendable) -> Request {
        Request(method: .post, path: path, body: .encodable(body))
    }

    public static func put(_ path: String, body: some Encodable & Sendable) -> Request {
        Request(method: .put, path: path, body: .encodable(body))
    }

    /// Marks a non-idempotent request as safe to retry: the server must deduplicate by this key.
    public func idempotencyKey(_ key: String = UUID().uuidString) -> Request {
        var copy = self
        copy.headers[.idempotencyKey] = key
        return copy
    }

    /// Whether repeating the request has the same effect as sending it once (RFC 9110, 9.2.2),
    /// or it carries an `Idempotency-Key`.
    public var isRetrySafe: Bool { Self.isRetrySafe(method: method, headers: headers) }

    static func isRetrySafe(method: HTTPRequest.Method, headers: HTTPFields) -> Bool {
        switch method {
        case .get, .head, .put, .delete, .options, .trace: return true
        default: return headers[.idempotencyKey] != nil
        }
    }
}

extension HTTPField.Name {
    public static let idempotencyKey = HTTPField.Name("Idempotency-Key")!
    public static let retryAfterHeader = HTTPField.Name("Retry-After")!
}

/// A response with its whole body, as middlewares and operations see it.
public struct ClientResponse: Sendable {
    public var response: HTTPResponse
    public var body: Data

    public init(response: HTTPResponse, body: Data) {
        self.response = response
        self.body = body
    }

    /// The status code, e.g. `200`.
    public var status: Int { response.status.code }

    public var headerFields: HTTPFields { response.headerFields }

    /// The body parsed as untyped JSON (`.null` for an empty body).
    ///
    /// - Throws: ``OutpostError`` with code ``OutpostError/Code/malformedResponse`` when the body is not JSON.
    public func json() throws -> JSONValue {
        if body.isEmpty { return .null }
        do {
            return try JSONValue(parsing: body)
        } catch {
            throw OutpostError(
                .malformedResponse, "The response body is not valid JSON (\(body.count) bytes, starting \(Self.preview(body)))",
                suggestion: "Check that the URL points at a JSON API and not at an HTML page or a proxy",
                status: status, underlying: error)
        }
    }

    static func preview(_ data: Data) -> String {
        let prefix = String(decoding: data.prefix(40), as: UTF8.self)
        return "\"" + prefix.replacingOccurrences(of: "\n", with: " ") + (data.count > 40 ? "…\"" : "\"")
    }
}
