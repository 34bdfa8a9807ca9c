public import Foundation
public import HTTPTypes

#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

/// A ``ClientTransport`` on `URLSession` (FoundationNetworking on Linux).
///
/// Create it with ``init(configuration:)`` to own a session (invalidated by ``shutdown()``), or with
/// ``init(borrowing:)`` to use the application's session.
public final class URLSessionTransport: ClientTransport {
    public let session: URLSession
    private let owned: Bool

    /// Creates a transport that owns an ephemeral session (no cookies or cache on disk).
    public init(configuration: URLSessionConfiguration = .ephemeral) {
        self.session = URLSession(configuration: configuration)
        self.owned = true
    }

    /// Creates a transport over a session that the caller owns.
    public init(borrowing session: URLSession) {
        self.session = session
        self.owned = false
    }

    public func send(_ request: HTTPRequest, body: Data?, options: TransportOptions) async throws -> (HTTPResponse, Data) {
        guard let url = request.url else {
            throw OutpostError(.invalidRequest, "The request has no absolute URL")
        }
        var outgoing = URLRequest(url: url)
        outgoing.httpMethod = request.method.rawValue
        outgoing.timeoutInterval =
            Double(options.timeout.components.seconds)
            + Double(options.timeout.components.attoseconds) / 1e18
        for field in request.headerFields {
            outgoing.addValue(field.value, forHTTPHeaderField: field.name.rawName)
        }
        outgoing.httpBody = body
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await session.data(for: outgoing)
        } catch {
            throw Self.classify(error, options: options)
        }
        guard let http = response as? HTTPURLResponse else {
            throw OutpostError(.malformedResponse, "The response was not an HTTP response")
        }
        if data.count > options.maxResponseBytes {
            throw OutpostError.responseTooLarge(options, underlying: nil)
        }
        var fields = HTTPFields()
        for (key, value) in http.allHeaderFields {
            if let key = key as? String, let name = HTTPField.Name(key), let value = value as? String {
                fields.append(HTTPField(name: name, value: value))
            }
        }
        return (HTTPResponse(status: .init(code: http.statusCode), headerFields: fields), data)
    }

    public func shutdown() async throws {
        if owned { session.finishTasksAndInvalidate() }
    }

    static func classify(_ error: any Error, options: TransportOptions) -> OutpostError {
        if error is CancellationError { return .transportCancelled(underlying: error) }
        if let error = error as? URLError {
            switch error.code {
            case .timedOut: return .transportTimeout(options, underlying: error)
            case .cancelled: return .transportCancelled(underlying: error)
            case .networkConnectionLost: return .connectionLost(underlying: error)
            default: break
            }
        }
        return .cannotConnect(error.localizedDescription, underlying: error)
    }
}
