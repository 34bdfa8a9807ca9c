public import Foundation
public import HTTPTypes
@_spi(OutpostInternal) import OutpostSupport

#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

/// A ``ClientTransport`` on `URLSession` (FoundationNetworking on Linux).
///
/// Create it with ``init(configuration:)`` to own a session (invalidated by ``shutdown()``), or with
/// ``init(borrowing:)`` to use the application's session.
///
/// ``TransportOptions/timeout`` bounds the whole exchange, body included (`URLRequest`'s own
/// timeout is only the longest silence); ``shutdown()`` cancels the requests in flight.
public final class URLSessionTransport: ClientTransport {
    public let session: URLSession
    private let owned: Bool
    private let exchanges = InFlightExchanges<(Data, URLResponse)>()
    /// The session and delegate of streamed exchanges (``stream(_:body:options:)``).
    let streams: URLSessionStreams

    /// Creates a transport that owns an ephemeral session (no cookies or cache on disk).
    public init(configuration: URLSessionConfiguration = .ephemeral) {
        self.session = URLSession(configuration: configuration)
        self.owned = true
        self.streams = URLSessionStreams(configuration: configuration)
    }

    /// Creates a transport over a session that the caller owns.
    public init(borrowing session: URLSession) {
        self.session = session
        self.owned = false
        self.streams = URLSessionStreams(configuration: session.configuration)
    }

    public func send(_ request: HTTPRequest, body: Data?, options: TransportOptions) async throws -> (HTTPResponse, Data) {
        guard let url = request.url else {
            throw OutpostError(.invalidRequest, "The request has no absolute URL")
        }
        var outgoing = URLRequest(url: url)
        outgoing.httpMethod = request.method.rawValue
        outgoing.timeoutInterval =
            options.timeout.inSeconds
        for field in request.headerFields {
            outgoing.addValue(field.value, forHTTPHeaderField: field.name.rawName)
        }
        outgoing.httpBody = body
        let data: Data
        let response: URLResponse
        let session = session
        let prepared = outgoing
        do {
            (data, response) = try await exchanges.run(options: options) { try await session.data(for: prepared) }
        } catch {
            let isHTTP = ["http", "https"].contains(url.scheme?.lowercased() ?? "")
            throw Self.classify(error, options: options, httpURL: isHTTP)
        }
        guard let http = response as? HTTPURLResponse else {
            throw OutpostError(.malformedResponse, "The response was not an HTTP response")
        }
        if data.count > options.maxResponseBytes {
            throw OutpostError.responseTooLarge(options, underlying: nil)
        }
        return (Self.head(of: http), data)
    }

    /// Cancels the requests in flight, then invalidates the session if this transport owns it.
    public func shutdown() async throws {
        await exchanges.cancelAll()
        streams.shutdown()
        if owned { session.invalidateAndCancel() }
    }

    /// - Parameter httpURL: whether the request's URL was `http(s)`: then an "unsupported URL" is
    ///   FoundationNetworking's (libcurl's) word for a reply that is not HTTP.
    static func classify(_ error: any Error, options: TransportOptions, httpURL: Bool = false) -> OutpostError {
        if let error = error as? OutpostError { return error }
        if error is CancellationError { return .transportCancelled(underlying: error) }
        if let error = error as? URLError {
            switch error.code {
            case .timedOut: return .transportTimeout(options, underlying: error)
            case .cancelled: return .transportCancelled(underlying: error)
            case .networkConnectionLost: return .connectionLost(underlying: error)
            case .badServerResponse, .cannotParseResponse, .cannotDecodeRawData, .cannotDecodeContentData:
                return .malformedResponse(underlying: error)
            case .unsupportedURL where httpURL:
                return .malformedResponse(underlying: error)
            default: break
            }
        }
        return .cannotConnect(error.localizedDescription, underlying: error)
    }
}
