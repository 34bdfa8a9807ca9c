import Foundation
import Outpost
import OutpostServer
import OutpostTestSupport
import Testing

/// What a user uploads comes back to other users: a file must never run as the server's origin,
/// whatever type its uploader gave it (an HTML or SVG file on the server's origin could read the
/// sign-in pages' form tokens and approve the uploader's device code).
@Suite("File serving", .closesWhatItOpens)
struct FileServingTests {
    /// An upload with `contentType` (raw, so that any type can be sent), answered 201.
    static func upload(_ fixture: FilesIntegrationTests.Fixture, _ name: String, contentType: String, body: String) async throws {
        let token = try #require(try await fixture.auth.passwordTokens("ada")["access_token"] as? String)
        let reply = try await fixture.raw(
            "PUT /files/\(name) HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \(token)\r\nContent-Type: \(contentType)\r\n"
                + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)")
        #expect(reply.status == 201, "\(name): \(reply.text)")
    }

    static let script = "<script>document.cookie='pwned=1'</script>"

    @Test(
        "every download says nosniff and a sandboxing CSP; document and script types are attachments, media and text inline",
        arguments: [
            ("page.html", "text/html", "attachment"), ("page2.html", "TEXT/HTML; charset=utf-8", "attachment"),
            ("drawing.svg", "image/svg+xml", "attachment"), ("page.xhtml", "application/xhtml+xml", "attachment"),
            ("data.xml", "text/xml", "attachment"), ("app.js", "application/javascript", "attachment"),
            ("doc.pdf", "application/pdf", "attachment"), ("unknown.bin", "application/x-made-up", "attachment"),
            ("photo.png", "image/png", "inline"), ("clip.mp4", "video/mp4", "inline"), ("notes.txt", "text/plain", "inline"),
            ("sound.ogg", "audio/ogg", "inline"), ("family.bin", "video/", "attachment"),
        ])
    func headers(name: String, contentType: String, disposition: String) async throws {
        try await FilesIntegrationTests.withFixture { fixture in
            try await Self.upload(fixture, name, contentType: contentType, body: Self.script)
            for method in ["GET", "HEAD"] {
                let reply = try await fixture.raw("\(method) /files/\(name) HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
                #expect(reply.status == 200)
                #expect(reply.headers["content-type"] == contentType, "the uploader's type is kept")
                #expect(reply.headers["x-content-type-options"] == "nosniff")
                #expect(reply.headers["content-security-policy"] == "default-src 'none'; style-src 'unsafe-inline'; sandbox")
                #expect(reply.headers["content-disposition"] == "\(disposition); filename*=UTF-8''\(name)", "\(method) \(name)")
            }
            // A range and a conditional GET carry the same protection.
            let range = try await fixture.raw(
                "GET /files/\(name) HTTP/1.1\r\nHost: a\r\nRange: bytes=0-3\r\nConnection: close\r\n\r\n")
            #expect(range.status == 206)
            #expect(range.headers["content-security-policy"]?.hasSuffix("sandbox") == true)
        }
    }

    @Test(
        "with a files origin: the server's origin checks the caller and redirects to a signed link; that origin serves nothing else"
    )
    func filesOrigin() async throws {
        // The files origin is `localhost` on the server's own port: another host name, the same server.
        let socket = try LoopbackSocket()
        let port = socket.port
        socket.close()
        let rules = try AccessRuleSet(json: Data(#"{"files": {"read": "caller.signed_in"}}"#.utf8))
        try await FilesIntegrationTests.withFixture(configure: {
            $0.port = port
            $0.filesURL = URL(string: "http://localhost:\(port)")
            $0.accessRules = rules
        }) { fixture in
            try await Self.upload(fixture, "page.html", contentType: "text/html", body: Self.script)
            let token = try #require(try await fixture.auth.passwordTokens("bob")["access_token"] as? String)

            // Anonymous: refused by the rule before any link is made.
            let anonymous = try await fixture.raw("GET /files/page.html HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
            #expect(anonymous.status == 404)
            let redirect = try await fixture.raw(
                "GET /files/page.html HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\nConnection: close\r\n\r\n")
            #expect(redirect.status == 307)
            #expect(redirect.headers["cache-control"] == "private, no-store")
            let location = try #require(redirect.headers["location"])
            #expect(location.hasPrefix("http://localhost:\(port)/files/page.html?expires="))
            let components = try #require(URLComponents(string: location))
            let target = "\(components.percentEncodedPath)?\(components.percentEncodedQuery ?? "")"

            // The link works without a token on the files origin, with the same protective fields.
            let served = try await fixture.raw("GET \(target) HTTP/1.1\r\nHost: localhost:\(port)\r\nConnection: close\r\n\r\n")
            #expect(served.status == 200)
            #expect(served.body == Self.script)
            #expect(served.headers["content-disposition"]?.hasPrefix("attachment") == true)

            // A changed signature, a link for another name and an unsigned request are 404 there.
            let forged = target.replacingOccurrences(of: "signature=", with: "signature=A")
            let other = target.replacingOccurrences(of: "page.html", with: "other.html")
            for path in [forged, other, "/files/page.html"] {
                let reply = try await fixture.raw("GET \(path) HTTP/1.1\r\nHost: LOCALHOST\r\nConnection: close\r\n\r\n")
                #expect(reply.status == 404, "\(path)")
            }
            // The files origin serves nothing of the server's own: no pages, no API, no writes.
            for request in [
                "GET /device HTTP/1.1", "GET /health HTTP/1.1", "GET /records/notes HTTP/1.1",
                "GET /.well-known/openid-configuration HTTP/1.1", "DELETE /files/page.html HTTP/1.1",
            ] {
                let reply = try await fixture.raw(
                    "\(request)\r\nHost: localhost:\(port)\r\nAuthorization: Bearer \(token)\r\nConnection: close\r\n\r\n")
                #expect(reply.status == 404, "\(request)")
                #expect(reply.body.contains("signed file links"), "\(request)")
            }

            // The SDK follows the redirect to the files origin and gets the bytes.
            let target2 = fixture.folder.appendingPathComponent("copy.html")
            _ = try await fixture.client("bob").files.download("page.html", to: target2).result
            #expect(try String(contentsOf: target2, encoding: .utf8) == Self.script)
        }
    }
}
