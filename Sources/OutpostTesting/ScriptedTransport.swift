public import Foundation
public import HTTPTypes
import HTTPTypesFoundation
@_spi(OutpostInternal) public import OutpostCore
import Synchronization

/// A `ClientTransport` for tests of code that uses an `OutpostClient`: every request goes to a
/// closure you write, which answers it as the server would, and is recorded.
///
/// ```swift
/// let transport = ScriptedTransport { request, body in
///     request.path == "/me" ? ScriptedTransport.reply(200, json: ["id": "u1"]) : ScriptedTransport.reply(404)
/// }
/// let client = transport.client()
/// let me: Me = try await client.send(.get("/me"), decoding: Me.self)
/// #expect(transport.requests.map(\.path) == ["/me"])
/// ```
///
/// Nothing goes over a network and nothing is retried unless the client's configuration says so
/// (``client(baseURL:configure:)`` turns retries off). Streams (file transfers, change feeds) get the
/// closure's whole answer as one piece, as `ClientTransport`'s default `stream` gives.
public final class ScriptedTransport: ClientTransport {
    /// Answers one request: the response and its body, or an error thrown as the transport's.
    public typealias Responder = @Sendable (HTTPRequest, Data?) async throws -> (HTTPResponse, Data)

    /// A request as the client sent it.
    public struct Exchange: Sendable {
        public var request: HTTPRequest
        public var body: Data?

        public var method: HTTPRequest.Method { request.method }
        public var url: URL? { request.url }
        /// The path without the query, as sent (a trailing slash kept), e.g. `/records/people/r1`.
        public var path: String {
            String((request.path ?? "").split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0])
        }
        /// The query's items by name (the last of a repeated name).
        public var query: [String: String] {
            let items = url.flatMap { URLComponents(url: $0, resolvingAgainstBaseURL: false)?.queryItems } ?? []
            return Dictionary(items.map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { _, last in last })
        }
        /// The body as JSON, or `nil` when there is none or it is not JSON.
        public var json: JSONValue? { body.flatMap { try? JSONValue(parsing: $0) } }
        public func header(_ name: HTTPField.Name) -> String? { request.headerFields[name] }
    }

    private let recorded = Mutex<[Exchange]>([])
    private let responder: Responder

    /// Answers one request given as an ``Exchange``, whose ``Exchange/path``, ``Exchange/query`` and
    /// ``Exchange/json`` a script usually routes on.
    public typealias ExchangeResponder = @Sendable (Exchange) async throws -> (HTTPResponse, Data)

    /// A transport that answers with `responder`.
    public init(_ responder: @escaping Responder) {
        self.responder = responder
    }

    /// A transport that answers with `responder`, handing it each request as an ``Exchange``:
    ///
    /// ```swift
    /// let transport = ScriptedTransport(answering: { exchange in
    ///     guard exchange.path == "/search" else { return ScriptedTransport.reply(404) }
    ///     return ScriptedTransport.reply(200, json: ["q": .string(exchange.query["q"] ?? "")])
    /// })
    /// ```
    public convenience init(answering responder: @escaping ExchangeResponder) {
        self.init { request, body in try await responder(Exchange(request: request, body: body)) }
    }

    public func send(_ request: HTTPRequest, body: Data?, options: TransportOptions) async throws -> (HTTPResponse, Data) {
        recorded.withLock { $0.append(Exchange(request: request, body: body)) }
        return try await responder(request, body)
    }

    /// Every request sent so far, oldest first.
    public var requests: [Exchange] { recorded.withLock { $0 } }

    /// A client over this transport (which it borrows), with retries off unless `configure` turns
    /// them on.
    public func client(
        baseURL: String = "http://scripted.test", configure: (inout OutpostClient.Configuration) -> Void = { _ in }
    ) -> OutpostClient {
        guard let url = URL(string: baseURL) else { preconditionFailure("not a URL: \(baseURL)") }
        var configuration = OutpostClient.Configuration(baseURL: url)
        configuration.retry.maxAttempts = 1
        configure(&configuration)
        return OutpostClient(configuration: configuration, transport: self)
    }

    /// A response with `status`, the JSON body `json` (with its content type) and `headers`.
    public static func reply(_ status: Int, json: JSONValue? = nil, headers: HTTPFields = [:]) -> (HTTPResponse, Data) {
        var fields = headers
        if json != nil { fields[.contentType] = "application/json" }
        return (HTTPResponse(status: .init(code: status), headerFields: fields), json.map { $0.jsonData() } ?? Data())
    }
}
