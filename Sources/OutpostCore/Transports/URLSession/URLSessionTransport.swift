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
/// Every exchange, ``send(_:body:options:)`` included, reads the response body as it arrives, so
/// a body past ``TransportOptions/maxResponseBytes`` is refused once that many bytes have come,
/// never buffered whole first. ``TransportOptions/timeout`` bounds the whole exchange, body
/// included (`URLRequest`'s own timeout is only the longest silence); ``shutdown()`` cancels the
/// requests in flight. Requests never use the session's `URLCache`: Outpost's `HTTPCache`
/// middleware is the one cache, and a second one under it would answer with what it has already
/// revalidated.
///
/// On Apple platforms each task gets the transport's delegate as its own (`URLSessionTask.delegate`),
/// so a borrowed session's delegate still answers what the task's does not: authentication
/// challenges (certificate pinning), metrics. FoundationNetworking on Linux has no task delegates,
/// so there the transport streams through a session of its own, made with the same configuration.
public final class URLSessionTransport: ClientTransport {
    public let session: URLSession
    private let owned: Bool
    private let exchanges = InFlightExchanges<(HTTPResponse, Data)>()
    /// The delegate (and on Linux, the session) of every exchange.
    let streams: URLSessionStreams

    /// The connections per host of a session this transport makes: live change feeds and file
    /// transfers each hold one for as long as they run, and URLSession's default (4 on iOS, 6 on
    /// macOS) would make a fifth feed or a request behind them wait.
    public static let connectionsPerHost = 16

    /// Creates a transport that owns a session with `configuration` (a copy, with no `URLCache` and at
    /// least ``connectionsPerHost`` connections per host). Default: ephemeral (no cookies or cache
    /// on disk).
    public init(configuration: URLSessionConfiguration = .ephemeral) {
        let configuration = Self.prepared(configuration)
        self.session = URLSession(configuration: configuration)
        self.owned = true
        self.streams = URLSessionStreams(session: session, owned: true)
    }

    /// Creates a transport over a session that the caller owns. Its delegate answers authentication
    /// challenges on Apple platforms; its limits (`httpMaximumConnectionsPerHost`) are the caller's
    /// to choose, so give it enough connections for the live feeds and transfers the app keeps open.
    public init(borrowing session: URLSession) {
        self.session = session
        self.owned = false
        self.streams = URLSessionStreams(session: session, owned: false)
    }

    /// A copy of `configuration` without a `URLCache`, with at least ``connectionsPerHost``.
    static func prepared(_ configuration: URLSessionConfiguration) -> URLSessionConfiguration {
        let copy = configuration.copy() as? URLSessionConfiguration ?? configuration
        copy.urlCache = nil
        copy.requestCachePolicy = .reloadIgnoringLocalCacheData
        copy.httpMaximumConnectionsPerHost = max(copy.httpMaximumConnectionsPerHost, connectionsPerHost)
        return copy
    }

    public func send(_ request: HTTPRequest, body: Data?, options: TransportOptions) async throws -> (HTTPResponse, Data) {
        guard let url = request.url else {
            throw OutpostError(.invalidRequest, "The request has no absolute URL")
        }
        do {
            return try await exchanges.run(options: options) {
                let (head, bytes) = try await self.start(request, body: body.map { .data($0) }, options: options)
                do {
                    return (head, try await bytes.collect(upTo: options.maxResponseBytes))
                } catch {
                    bytes.exchange?.cancel(error)  // stops the task: nothing more is read
                    throw error
                }
            }
        } catch {
            let isHTTP = ["http", "https"].contains(url.scheme?.lowercased() ?? "")
            throw Self.classify(error, options: options, httpURL: isHTTP)
        }
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
