import Foundation
import HTTPTypes
import HTTPTypesFoundation
@_spi(OutpostInternal) import OutpostCore

/// Moves requests between the runtime's form (a path relative to a server URL, given beside the
/// request) and Outpost's (an absolute request: scheme, authority and the whole path).
enum RequestTarget {
    /// `request` with the scheme and authority of `baseURL`, and its path after `baseURL`'s. A request
    /// that already has a scheme and an authority is returned as it is.
    static func absolute(_ request: HTTPRequest, baseURL: URL) throws -> HTTPRequest {
        if request.scheme != nil, request.authority != nil { return request }
        guard let base = Base(baseURL) else {
            throw OutpostError(
                .invalidRequest, "The server URL '\(baseURL.absoluteString)' is not an absolute http or https URL",
                suggestion: "Give the generated client a server URL such as https://api.example.com/v1",
                method: request.method.rawValue, path: request.path)
        }
        var absolute = request
        absolute.scheme = base.scheme
        absolute.authority = base.authority
        let path = request.path ?? "/"
        absolute.path = base.path + (path.hasPrefix("/") || path.hasPrefix("?") ? path : "/" + path)
        return absolute
    }

    /// `request` (absolute) in the runtime's form: its path relative to `baseURL` when it stays on
    /// `baseURL`'s origin and under its path, otherwise its whole path relative to its own origin.
    static func relative(_ request: HTTPRequest, baseURL: URL) -> (HTTPRequest, URL) {
        guard let scheme = request.scheme, let authority = request.authority else { return (request, baseURL) }
        var relative = request
        relative.scheme = nil
        relative.authority = nil
        let path = request.path ?? "/"
        if let base = Base(baseURL), base.scheme.lowercased() == scheme.lowercased(),
            base.authority.lowercased() == authority.lowercased(), path.hasPrefix(base.path)
        {
            let rest = path.dropFirst(base.path.count)
            if rest.isEmpty || rest.hasPrefix("/") || rest.hasPrefix("?") {
                relative.path = rest.isEmpty ? "/" : String(rest)
                return (relative, baseURL)
            }
        }
        relative.path = path
        // The request's own origin; the authority came from a valid request, so it forms a URL.
        return (relative, URL(string: "\(scheme)://\(authority)") ?? baseURL)
    }

    /// A server URL taken apart: scheme, authority, and path without its trailing slash.
    struct Base {
        var scheme: String
        var authority: String
        var path: String

        init?(_ url: URL) {
            guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else { return nil }
            let request = HTTPRequest(method: .get, url: url)
            guard let authority = request.authority, !authority.isEmpty else { return nil }
            var path = request.path ?? ""
            if let query = path.firstIndex(of: "?") { path = String(path[..<query]) }
            while path.hasSuffix("/") { path.removeLast() }
            self.scheme = scheme
            self.authority = authority
            self.path = path
        }
    }
}
