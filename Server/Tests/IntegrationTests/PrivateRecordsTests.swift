import Foundation
import HTTPTypes
import Outpost
import OutpostServer
import OutpostTestSupport
import Testing

/// `?visibility=private`: a record only its owner can see; to anyone else it does not exist.
@Suite("Private records", .closesWhatItOpens)
struct PrivateRecordsTests {
    static func send(
        _ base: URL, _ method: HTTPRequest.Method, _ path: String, token: String? = nil, body: JSONValue? = nil
    ) async throws -> ClientResponse {
        var fields = HTTPFields()
        fields[.contentType] = method == .patch ? "application/merge-patch+json" : "application/json"
        if let token { fields[.authorization] = "Bearer \(token)" }
        let request = HTTPRequest(
            method: method, scheme: "http", authority: "\(base.host ?? "127.0.0.1"):\(base.port ?? 80)", path: path,
            headerFields: fields)
        let transport = AsyncHTTPClientTransport()
        do {
            let (head, data) = try await transport.send(request, body: body?.jsonData(), options: TransportOptions())
            try await transport.shutdown()
            return ClientResponse(response: head, body: data)
        } catch {
            try? await transport.shutdown()
            throw error
        }
    }

    @Test("only the owner reads, lists, changes or deletes a private record; others get 404")
    func ownerOnly() async throws {
        try await withAuthFixture { fixture in
            let base = fixture.server.baseURL
            let ada = try #require(try await fixture.passwordTokens("ada")["access_token"] as? String)
            let bob = try #require(try await fixture.passwordTokens("bob")["access_token"] as? String)
            let secret = try await Self.send(
                base, .post, "/records/diary?visibility=private", token: ada, body: ["text": "secret"])
            #expect(secret.status == 201)
            let id = try #require(try secret.json()["id"]?.stringValue)
            let open = try await Self.send(base, .post, "/records/diary", token: ada, body: ["text": "open"])
            #expect(open.status == 201)

            #expect(try await Self.send(base, .get, "/records/diary/\(id)", token: ada).status == 200)
            for token in [bob, nil] {
                let read = try await Self.send(base, .get, "/records/diary/\(id)", token: token)
                #expect(read.status == 404)
                #expect(try read.json()["error"]?["code"] == "record_not_found")
                #expect(try await Self.send(base, .put, "/records/diary/\(id)", token: token, body: [:]).status == 404)
                #expect(try await Self.send(base, .patch, "/records/diary/\(id)", token: token, body: [:]).status == 404)
                #expect(try await Self.send(base, .delete, "/records/diary/\(id)", token: token).status == 404)
                let page = try await Self.send(base, .get, "/records/diary?page=1", token: token).json()
                #expect(page["total"] == 1)
                #expect(page["results"]?[0]?["text"] == "open")
                let cursor = try await Self.send(base, .get, "/records/diary", token: token).json()
                #expect(cursor["results"]?.arrayValue?.count == 1)
            }
            let own = try await Self.send(base, .get, "/records/diary?page=1", token: ada).json()
            #expect(own["total"] == 2)
            let patched = try await Self.send(base, .patch, "/records/diary/\(id)", token: ada, body: ["text": "edited"])
            #expect(patched.status == 200)
            #expect(try await Self.send(base, .delete, "/records/diary/\(id)", token: ada).status == 204)
        }
    }

    @Test("a private record needs a signed-in user; visibility takes public or private")
    func creation() async throws {
        try await withAuthFixture { fixture in
            let base = fixture.server.baseURL
            let anonymous = try await Self.send(base, .post, "/records/diary?visibility=private", body: ["a": 1])
            #expect(anonymous.status == 401)
            #expect(try anonymous.json()["error"]?["code"] == "sign_in_required")
            let ada = try #require(try await fixture.passwordTokens("ada")["access_token"] as? String)
            let bogus = try await Self.send(base, .post, "/records/diary?visibility=secret", token: ada, body: ["a": 1])
            #expect(bogus.status == 400)
            #expect(try bogus.json()["error"]?["code"] == "invalid_visibility")
            let explicit = try await Self.send(base, .post, "/records/diary?visibility=public", body: ["a": 1])
            #expect(explicit.status == 201)
            let page = try await Self.send(base, .get, "/records/diary?page=1").json()
            #expect(page["total"] == 1)
        }
    }
}
