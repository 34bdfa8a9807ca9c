import Foundation
import Testing

@testable import OutpostServer

@Suite("File serving headers and signed file links")
struct FileServingHeadersTests {
    @Test("a file name in Content-Disposition is percent-encoded (RFC 8187), so no name can add a parameter or a field")
    func dispositionName() {
        #expect(FileServingHeaders.encodedFilename("a b;c\"d\u{e9}\r\n.html") == "a%20b%3Bc%22d%C3%A9%0D%0A.html")
        let fields = FileServingHeaders.fields(name: "x\"; filename=evil.html", contentType: "text/plain")
        #expect(fields[.contentDisposition] == "inline; filename*=UTF-8''x%22%3B%20filename%3Devil.html")
    }

    @Test("only listed media types and families are inline, compared by their essence")
    func inlineTypes() {
        for type in ["image/png", "IMAGE/PNG ; q=1", "text/plain; charset=utf-8", "audio/mpeg", "video/mp4"] {
            #expect(FileServingHeaders.isInline(type), "\(type)")
        }
        for type in ["image/svg+xml", "text/html", "text/plainx", "", "video/", "application/pdf", "text/xml", "multipart/x"] {
            #expect(!FileServingHeaders.isInline(type), "\(type)")
        }
    }

    @Test("a signed link names its origin and expiry; it is admitted until it expires, and only with its own key and name")
    func links() throws {
        var links = try #require(
            FileLinks(url: URL(string: "https://Files.Example.net"), key: Data(repeating: 1, count: 32), lifetime: .seconds(300)))
        links.now = { 1_000 }
        let signature = links.signature("a b.png", expires: 1300)
        #expect(links.link(to: "a b.png") == "https://files.example.net/files/a%20b.png?expires=1300&signature=\(signature)")
        #expect(links.admits(name: "a b.png", expires: "1300", signature: signature))
        #expect(!links.admits(name: "a b.png", expires: "1301", signature: signature), "another expiry")
        #expect(!links.admits(name: "c.png", expires: "1300", signature: signature), "another name")
        #expect(!links.admits(name: "a b.png", expires: nil, signature: signature))
        #expect(!links.admits(name: "a b.png", expires: "1300", signature: nil))
        links.now = { 1_301 }
        #expect(!links.admits(name: "a b.png", expires: "1300", signature: signature), "expired")
        let other = try #require(
            FileLinks(url: URL(string: "https://files.example.net"), key: Data(count: 32), lifetime: .seconds(300)))
        #expect(!other.admits(name: "a b.png", expires: "1300", signature: signature), "another key")
        #expect(FileLinks.hostName(of: "files.example.net:8443") == "files.example.net")
        #expect(FileLinks.hostName(of: "[::1]:8080") == "[::1]")
        #expect(FileLinks(url: URL(string: "/relative"), key: Data(), lifetime: .seconds(1)) == nil)
    }
}

@Suite("Host names DNS cannot rebind")
struct ReboundHostTests {
    @Test("IP literals and localhost are the server's own origin without a public URL; domain names are not")
    func hosts() {
        for host in ["127.0.0.1:8080", "localhost:3000", "LOCALHOST", "[::1]:80", "10.0.0.7", "192.168.1.20:8080"] {
            #expect(OAuthRoutes.cannotBeRebound(host), "\(host)")
        }
        for host in ["evil.example:8080", "127.0.0.1.nip.io", "localhost.evil.example", "1.2.3", "01.2.3.4", "256.1.1.1", ""] {
            #expect(!OAuthRoutes.cannotBeRebound(host), "\(host)")
        }
    }
}

@Suite("Where files are kept")
struct FilesDirectoryTests {
    @Test("next to an SQLite file; none for a PostgreSQL URL (files live in the database), never a path made of the URL")
    func defaults() {
        #expect(ServerConfiguration(databasePath: "/srv/outpost.sqlite").resolvedFilesDirectory == "/srv/outpost-files")
        for url in ["postgres://app:s3cret@db.example:5432/outpost", "POSTGRESQL://app@db/outpost"] {
            #expect(ServerConfiguration(databasePath: url).resolvedFilesDirectory == nil)
        }
        var named = ServerConfiguration(databasePath: "postgres://app@db/outpost")
        named.filesDirectory = "/shared/files"
        #expect(named.resolvedFilesDirectory == "/shared/files")
    }
}
