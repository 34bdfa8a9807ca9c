public import Foundation
public import HTTPTypes
import HTTPTypesFoundation
import Logging

#if os(Linux) || os(Android) || os(Windows) || os(OpenBSD)
    import AsyncHTTPClient
#endif

/// The entry point of the SDK: sends requests to one backend through a chain of middlewares and a
/// transport, and turns what comes back into values or ``OutpostError``s.
///
/// ```swift
/// let client = OutpostClient(configuration: .init(baseURL: URL(string: "http://127.0.0.1:8080")!))
/// defer { Task { try await client.shutdown() } }
/// let greeting = try await client.callLambda("hello:someone", arguments: .positional(["world"]))
/// ```
///
/// A client created without a transport owns one (AsyncHTTPClient on Linux, URLSession elsewhere) and
/// releases it in ``shutdown()``; a client given a transport borrows it and leaves it alone.
public final class OutpostClient: Sendable {
    public let configuration: Configuration
    public let transport: any ClientTransport
    public let middlewares: [any ClientMiddleware]
    private let ownsTransport: Bool
    /// What every request starts from, worked out once from the configuration.
    private let template: RequestTemplate

    /// Creates a client that owns the platform's default transport.
    public convenience init(configuration: Configuration, middlewares: [any ClientMiddleware] = []) {
        self.init(configuration: configuration, ownedTransport: Self.defaultTransport(), middlewares: middlewares)
    }

    /// Creates a client over a transport that the caller owns (and shuts down).
    public init(configuration: Configuration, transport: any ClientTransport, middlewares: [any ClientMiddleware] = []) {
        self.configuration = configuration
        self.transport = transport
        self.middlewares = middlewares
        self.ownsTransport = false
        self.template = RequestTemplate(configuration)
    }

    /// Creates a client that owns `transport` and shuts it down in ``shutdown()``.
    public init(configuration: Configuration, ownedTransport: any ClientTransport, middlewares: [any ClientMiddleware] = []) {
        self.configuration = configuration
        self.transport = ownedTransport
        self.middlewares = middlewares
        self.ownsTransport = true
        self.template = RequestTemplate(configuration)
    }

    /// Releases the transport if this client owns it: requests still in flight are cancelled (they
    /// fail with ``OutpostError/Code/cancelled``) and it returns without waiting for the server.
    /// Call it once, when done with the client. A borrowed transport is left alone.
    public func shutdown() async throws {
        if ownsTransport { try await transport.shutdown() }
    }

    static func defaultTransport() -> any ClientTransport {
        #if os(Linux) || os(Android) || os(Windows) || os(OpenBSD)
            return AsyncHTTPClientTransport()
        #else
            return URLSessionTransport()
        #endif
    }

    // MARK: Sending

    /// Sends a request and returns the response if its status is 2xx (or 304, the answer to a
    /// conditional request) and it carries no service error.
    ///
    /// - Throws: ``OutpostError``: ``OutpostError/Code/httpStatus`` (with the server's code and message),
    ///   ``OutpostError/Code/serviceError``, or a transport failure.
    public func send(_ request: Request, operationName: String? = nil) async throws -> ClientResponse {
        try await prepare(request, operationName: operationName).start()
    }

    /// Sends a request and decodes its body as `T`.
    public func send<T: Decodable>(_ request: Request, decoding type: T.Type, operationName: String? = nil) async throws -> T {
        let response = try await send(request, operationName: operationName)
        return try decode(type, from: response, method: request.method.rawValue, path: request.path)
    }

    /// Builds the request as it will go out (URL, headers, encoded body) without sending it;
    /// ``PreparedRequest/start()`` sends it later, as many times as wanted.
    public func prepare(_ request: Request, operationName: String? = nil) throws -> PreparedRequest {
        var http: HTTPRequest
        if request.query.isEmpty, let path = template.path(for: request.path) {
            // The common case, without parsing a URL: the same parts `HTTPRequest(url:)` would take
            // from `makeURL(for:)` (a test compares the two).
            http = HTTPRequest(
                method: request.method, scheme: template.scheme, authority: template.authority, path: path,
                headerFields: template.headerFields)
        } else {
            http = HTTPRequest(method: request.method, url: try makeURL(for: request), headerFields: template.headerFields)
        }
        var body: Data?
        if let requestBody = request.body {
            let contentType: String
            (body, contentType) = try encode(requestBody, method: request.method.rawValue, path: request.path)
            http.headerFields[.contentType] = contentType
        }
        for field in request.headers { http.headerFields[field.name] = field.value }
        return PreparedRequest(
            client: self, request: http, body: body, timeout: request.timeout ?? configuration.timeout,
            operationName: operationName)
    }

    /// A request for `request`, an absolute HTTP request built elsewhere (a generated client's), with
    /// the client's default header fields where the request has none of its own, the client's
    /// timeout unless `timeout` is given, and `body` as it is.
    @_spi(OutpostInternal) public func prepare(
        _ request: HTTPRequest, body: Data?, timeout: Duration? = nil, operationName: String? = nil
    ) -> PreparedRequest {
        var http = request
        for field in template.headerFields where http.headerFields[field.name] == nil {
            http.headerFields[field.name] = field.value
        }
        return PreparedRequest(
            client: self, request: http, body: body, timeout: timeout ?? configuration.timeout, operationName: operationName)
    }

    /// The request `prepare(_:operationName:)` builds through `makeURL(for:)` alone, for tests that
    /// check the shortcut against it.
    func prepareByParsing(_ request: Request) throws -> HTTPRequest {
        HTTPRequest(method: request.method, url: try makeURL(for: request), headerFields: template.headerFields)
    }

    /// Decodes a response body as `T` with the configured decoder, turning failures into
    /// ``OutpostError/Code/decodingFailed`` (with the coding path) or
    /// ``OutpostError/Code/malformedResponse`` (when the body is not JSON at all).
    public func decode<T: Decodable>(_ type: T.Type, from response: ClientResponse, method: String, path: String) throws -> T {
        try Self.decode(type, from: response, decoder: configuration.decoder, method: method, path: path)
    }

    /// Decodes with `decoder`, reporting failures as ``decode(_:from:method:path:)`` does.
    @_spi(OutpostInternal) public static func decode<T: Decodable>(
        _ type: T.Type, from response: ClientResponse, decoder: JSONDecoder, method: String, path: String
    ) throws -> T {
        // Untyped JSON is read from the bytes in one pass (see JSONValue.init(from:) for why).
        if T.self == JSONValue.self, JSONValue.parsesAsDecoder(decoder),
            let value = try? JSONValue(parsing: response.body) as? T
        {
            return value
        }
        do {
            return try decoder.decode(T.self, from: response.body)
        } catch let error as DecodingError {
            if case .dataCorrupted(let context) = error, context.codingPath.isEmpty {
                throw OutpostError(
                    .malformedResponse, "The response body is not valid JSON (\(response.body.count) bytes)",
                    suggestion: "Check that the URL points at a JSON API and not at an HTML page or a proxy",
                    status: response.status, method: method, path: path, underlying: error)
            }
            var failure = OutpostError.decoding(error, type: T.self)
            failure.status = response.status
            throw failure.attributed(method: method, path: path)
        }
    }

    // MARK: Building

    func makeURL(for request: Request) throws -> URL {
        let path = request.path
        let url: URL?
        if path.hasPrefix("http://") || path.hasPrefix("https://") {
            url = URL(string: path)
        } else {
            var base = configuration.baseURL.absoluteString
            if base.hasSuffix("/") { base.removeLast() }
            url = URL(string: base + (path.hasPrefix("/") ? path : "/" + path))
        }
        if let url, request.query.isEmpty { return url }
        guard let url, var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
            throw OutpostError(
                .invalidRequest, "'\(path)' is not a valid request path",
                suggestion: "Percent-encode the path segments (see Request.pathSegment(_:))",
                method: request.method.rawValue, path: path)
        }
        if !request.query.isEmpty {
            components.queryItems = (components.queryItems ?? []) + request.query
            // URLComponents leaves `+` alone in query values, but servers read it as a space.
            components.percentEncodedQuery = components.percentEncodedQuery?.replacingOccurrences(of: "+", with: "%2B")
        }
        guard let final = components.url else {
            throw OutpostError(
                .invalidRequest, "The query of '\(path)' could not be encoded", method: request.method.rawValue, path: path)
        }
        return final
    }

    func encode(_ body: Request.Body, method: String, path: String) throws -> (Data, String) {
        func encoding(_ encode: () throws -> Data) throws -> Data {
            do {
                return try encode()
            } catch {
                throw OutpostError(
                    .encodingFailed, "The request body could not be encoded: \(error)",
                    suggestion: "Check the value's Encodable conformance (non-finite numbers such as nan cannot be JSON)",
                    method: method, path: path, underlying: error)
            }
        }
        switch body {
        case .data(let data, let contentType):
            return (data, contentType)
        case .json(let value):
            return (try encoding { try value.encoded() }, "application/json")
        case .encodable(let value):
            return (try encoding { try configuration.encoder.encode(value) }, "application/json")
        }
    }
}

/// The parts every request of a client shares: the base URL's scheme, authority and path, and the
/// default header fields with `User-Agent` and `Accept`.
struct RequestTemplate: Sendable {
    var scheme: String
    var authority: String
    /// The base URL's path without its trailing slash; `nil` when the base URL is unusual (a query,
    /// a fragment, user info), and every request takes the general path.
    var pathPrefix: String?
    var headerFields: HTTPFields

    init(_ configuration: OutpostClient.Configuration) {
        var fields = configuration.defaultHeaders
        fields[.userAgent] = configuration.userAgent
        if fields[.accept] == nil { fields[.accept] = "application/json" }
        headerFields = fields
        scheme = ""
        authority = ""
        pathPrefix = nil
        let baseURL = configuration.baseURL
        guard baseURL.query == nil, baseURL.fragment == nil, baseURL.user == nil, baseURL.password == nil else { return }
        var base = baseURL.absoluteString
        if base.hasSuffix("/") { base.removeLast() }
        // The parts of a probe URL, taken apart exactly as `prepare` would take apart a request's.
        guard base.hasPrefix("http://") || base.hasPrefix("https://"), let probe = URL(string: base + "/x") else { return }
        let request = HTTPRequest(method: .get, url: probe)
        guard let scheme = request.scheme, let authority = request.authority, let path = request.path, path.hasSuffix("/x")
        else { return }
        self.scheme = scheme
        self.authority = authority
        pathPrefix = String(path.dropLast(2))
    }

    /// The request path for `path` (relative to the base URL) when it needs no parsing: only bytes that
    /// stand for themselves in a URL path (RFC 3986 `pchar` and `/`, percent escapes with two hex
    /// digits), no query, no fragment, no absolute URL, no dot segment. `nil` otherwise.
    func path(for path: String) -> String? {
        guard let pathPrefix else { return nil }
        var previous: UInt8 = UInt8(ascii: "/")
        var hexDigitsDue = 0
        for byte in path.utf8 {
            if hexDigitsDue > 0 {
                guard byte.isHexDigitByte else { return nil }
                hexDigitsDue -= 1
            } else if byte == UInt8(ascii: "%") {
                hexDigitsDue = 2
            } else if byte == UInt8(ascii: ".") {
                // A dot segment (`/./`, `/../`) is left to the general path.
                if previous == UInt8(ascii: "/") { return nil }
            } else if byte == UInt8(ascii: ":") {
                // `http:`, or any scheme-like start, is left to the general path as well.
                return nil
            } else if !byte.isPathByte {
                return nil
            }
            previous = byte
        }
        guard hexDigitsDue == 0 else { return nil }
        return path.utf8.first == UInt8(ascii: "/") ? pathPrefix + path : pathPrefix + "/" + path
    }
}

extension UInt8 {
    fileprivate var isHexDigitByte: Bool {
        (0x30...0x39).contains(self) || (0x41...0x46).contains(self) || (0x61...0x66).contains(self)
    }

    /// Unreserved, sub-delims, `@` and `/` (RFC 3986), which a URL path carries as they are.
    fileprivate var isPathByte: Bool {
        switch self {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: return true
        case UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "/"), UInt8(ascii: "@"): return true
        case UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("),
            UInt8(ascii: ")"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: ","), UInt8(ascii: ";"),
            UInt8(ascii: "="):
            return true
        default: return false
        }
    }
}

extension Request {
    /// Percent-encodes one path segment, so that `a/b c` becomes `a%2Fb%20c`.
    public static func pathSegment(_ segment: String) -> String {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "/?#")
        return segment.addingPercentEncoding(withAllowedCharacters: allowed) ?? segment
    }
}
