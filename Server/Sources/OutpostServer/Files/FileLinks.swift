import Foundation
import HTTPTypes
import Hummingbird

/// Signed, short-lived links to files on the separate files origin (``ServerConfiguration/filesURL``).
///
/// The server's own origin checks a download as always (token, scope, access rules), then answers
/// `307` with `FILES_URL/files/NAME?expires=T&signature=S`, where `S` is the base64url HMAC-SHA256 of
/// `files-link`, the name and `T` under a key kept in storage (so every instance makes and accepts
/// the same links). The files origin serves a file only behind such a link, before `T`, and nothing
/// else. Anyone holding a link reads the file until it expires, as with any pre-signed URL.
struct FileLinks: Sendable {
    /// `scheme://host[:port]` of the files origin, without a trailing slash.
    let origin: String
    /// The files origin's host name, lowercased (bracketed when an IPv6 address). Requests are told
    /// apart by it alone, not by port: cookies do not separate ports, so a files origin must be
    /// another host name.
    let host: String
    let key: Data
    let lifetime: Duration
    /// The current time, in seconds since 1970 (a seam for the tests).
    var now: @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }

    init?(url: URL?, key: Data, lifetime: Duration) {
        guard let url, let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased() else { return nil }
        let port = url.port.map { ":\($0)" } ?? ""
        let bracketed = host.contains(":") ? "[\(host)]" : host
        origin = "\(scheme)://\(bracketed)\(port)"
        self.host = bracketed
        self.key = key
        self.lifetime = lifetime
    }

    /// Whether `request` was sent to the files origin (the host name of its `Host`, without case).
    func isFilesOrigin(_ request: Request) -> Bool {
        guard let authority = request.head.authority?.lowercased() else { return false }
        return Self.hostName(of: authority) == host
    }

    /// `authority` without its port: `[::1]:80` → `[::1]`, `files.example.net:8080` → `files.example.net`.
    static func hostName(of authority: String) -> Substring {
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
            return authority[...close]
        }
        return authority.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
    }

    /// The signed link to `name` on the files origin, valid for ``lifetime`` from now.
    func link(to name: String) -> String {
        let expires = now() + lifetime.components.seconds
        let path = name.addingPercentEncoding(withAllowedCharacters: Self.pathSegment) ?? name
        return "\(origin)/files/\(path)?expires=\(expires)&signature=\(signature(name, expires: expires))"
    }

    /// Whether `request` carries a link to `name` that this server signed and that has not expired.
    func admits(_ request: Request, name: String) -> Bool {
        let query = request.uri.queryParameters
        return admits(name: name, expires: query["expires"].map(String.init), signature: query["signature"].map(String.init))
    }

    /// Whether `expires` and `signature` (a link's query) make a link to `name` that is still valid.
    func admits(name: String, expires: String?, signature given: String?) -> Bool {
        guard let expires = expires.flatMap({ Int64($0) }), expires >= now(), let given else { return false }
        return Secrets.equal(given, signature(name, expires: expires))
    }

    func signature(_ name: String, expires: Int64) -> String {
        Secrets.base64URL(Secrets.hmacBytes("files-link\n\(name)\n\(expires)", key: key))
    }

    /// The characters a path segment keeps unescaped (RFC 3986 unreserved).
    static let pathSegment = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")
}

/// Everything sent to the files origin but a file download: `404`, so that origin serves nothing of
/// the server's own (no sign-in pages, no API) to a script in a file shown there.
struct FilesOriginMiddleware: RouterMiddleware {
    typealias Context = OutpostRequestContext
    let links: FileLinks

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        guard links.isFilesOrigin(request) else { return try await next(request, context) }
        let isDownload = [.get, .head].contains(request.method) && request.uri.path.hasPrefix("/files/")
        guard isDownload else {
            throw ServerError(
                .notFound, code: "not_found",
                message: "This host serves only signed file links; send other requests to the server's own address")
        }
        return try await next(request, context)
    }
}
