import Foundation
import Synchronization

/// The server's public base URL: ``ServerConfiguration/publicURL`` when set, else the address it
/// actually bound (`http://host:port`, known once it listens). Every absolute URL the server writes
/// (issuer, endpoints, `verification_uri`, list links) starts with it; the `Host` header is never used.
package final class PublicBase: Sendable {
    /// `nil` until the server listens; then `http://host:port`.
    private let bound = Mutex<String?>(nil)
    let configured: String?
    let fallback: String

    init(configuration: ServerConfiguration) {
        configured = configuration.publicURL.map(Self.normalized)
        fallback = Self.address(host: configuration.host, port: configuration.port)
    }

    /// The base URL without a trailing slash, e.g. `https://auth.example.com` or `http://127.0.0.1:8080`.
    var url: String { configured ?? bound.withLock { $0 } ?? fallback }

    /// The origin (scheme, host, port) of ``url``, for comparing with a browser's `Origin`.
    var origin: String {
        guard let components = URLComponents(string: url), let scheme = components.scheme, let host = components.host else {
            return url
        }
        let port = components.port.map { ":\($0)" } ?? ""
        return "\(scheme)://\(components.percentEncodedHost ?? host)\(port)"
    }

    func listening(host: String, port: Int) {
        bound.withLock { $0 = Self.address(host: host, port: port) }
    }

    static func address(host: String, port: Int) -> String {
        "http://\(host.contains(":") ? "[\(host)]" : host):\(port)"
    }

    static func normalized(_ url: URL) -> String {
        var text = url.absoluteString
        while text.hasSuffix("/") { text.removeLast() }
        return text
    }
}
