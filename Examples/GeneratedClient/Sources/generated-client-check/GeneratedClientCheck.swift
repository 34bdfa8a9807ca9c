import Foundation
import HTTPTypes
import OpenAPIRuntime
import Outpost
import OutpostOpenAPI

/// A check that did not hold, with what was expected and what came.
struct CheckFailure: Error, CustomStringConvertible {
    var description: String
}

/// Drives the client generated from the served OpenAPI document against a running `outpost serve --demo`,
/// through OutpostOpenAPI's transport and Outpost's `AuthMiddleware`, and exits non-zero with the
/// failed check on the first one that does not hold.
///
/// Usage: `generated-client-check SERVER_URL`, with `OUTPOST_USERNAME`, `OUTPOST_PASSWORD` and
/// `OUTPOST_CLIENT_ID` (a client registered with the password and refresh_token grants) in the
/// environment.
@main
struct GeneratedClientCheck {
    static func main() async {
        do {
            let checks = try await run()
            print("generated-client-check: all \(checks) checks passed")
        } catch {
            FileHandle.standardError.write(Data("generated-client-check: FAILED: \(error)\n".utf8))
            exit(1)
        }
    }

    static func run() async throws -> Int {
        let environment = ProcessInfo.processInfo.environment
        let arguments = CommandLine.arguments.dropFirst()
        guard arguments.count == 1, let serverURL = URL(string: arguments.first!), serverURL.host != nil else {
            throw CheckFailure(
                description:
                    "usage: generated-client-check SERVER_URL (with OUTPOST_USERNAME, OUTPOST_PASSWORD, OUTPOST_CLIENT_ID set)")
        }
        guard let username = environment["OUTPOST_USERNAME"], let password = environment["OUTPOST_PASSWORD"],
            let clientID = environment["OUTPOST_CLIENT_ID"]
        else {
            throw CheckFailure(
                description: "set OUTPOST_USERNAME, OUTPOST_PASSWORD and OUTPOST_CLIENT_ID (a client with the password grant)")
        }
        var check = Checks()

        let outpost = OutpostClient(configuration: .init(baseURL: serverURL))
        let authenticator = Authenticator(
            configuration: .init(registration: ClientRegistration(clientID: clientID), endpoints: .outpost(base: serverURL)),
            client: outpost)
        let client = Client(
            serverURL: serverURL,
            transport: OutpostTransport(client: outpost, configuration: .init(addsIdempotencyKeys: true)),
            middlewares: [OutpostMiddleware(AuthMiddleware(authenticator: authenticator), baseURL: serverURL)])

        // Sign in: the password grant, through the authenticator that AuthMiddleware signs with.
        let signedIn = try await authenticator.signIn(username: username, password: password)
        try check.that(signedIn.refreshToken != nil, "the password grant gave no refresh token")
        check.passed("signed in as \(username)")

        let type = "generated"
        // Create.
        let created = try await client.createRecord(
            path: .init(_type: type), body: .json(try .init(unvalidatedValue: ["title": "first", "n": 1])))
        guard case .created(let createdAnswer) = created else {
            throw CheckFailure(description: "createRecord answered \(created)")
        }
        let record = try createdAnswer.body.json
        try check.that(!record.id.isEmpty, "the created record has an empty id")
        try check.that(
            record.additionalProperties.value["title"] as? String == "first", "the created record lacks its title: \(record)")
        check.passed("createRecord → 201, id \(record.id)")

        // Read.
        let read = try await client.getRecord(path: .init(_type: type, id: record.id))
        guard case .ok(let readAnswer) = read else { throw CheckFailure(description: "getRecord answered \(read)") }
        try check.that(try readAnswer.body.json.id == record.id, "getRecord returned another record")
        try check.that(readAnswer.headers.ETag?.isEmpty == false, "getRecord has no ETag")
        check.passed("getRecord → 200 with an ETag")

        // A page-number list decodes as NumberedPage, so total is reachable.
        let numbered = try await client.listRecords(path: .init(_type: type), query: .init(page: 1, per_page: 10))
        guard case .ok(let numberedAnswer) = numbered else { throw CheckFailure(description: "listRecords answered \(numbered)") }
        switch try numberedAnswer.body.json {
        case .NumberedPage(let page):
            try check.that(page.total == 1 && page.results.count == 1 && page.page == 1, "the numbered page is \(page)")
        case .CursorPage(let page):
            throw CheckFailure(description: "a page-number list decoded as a CursorPage: \(page)")
        }
        check.passed("listRecords?page=1 → NumberedPage, total 1")

        // A cursor list decodes as CursorPage.
        let cursor = try await client.listRecords(path: .init(_type: type), query: .init(limit: 10))
        guard case .ok(let cursorAnswer) = cursor else { throw CheckFailure(description: "listRecords answered \(cursor)") }
        guard case .CursorPage(let cursorPage) = try cursorAnswer.body.json, cursorPage.results.map(\.id) == [record.id] else {
            throw CheckFailure(description: "a cursor list did not decode as a CursorPage with the record")
        }
        check.passed("listRecords?limit=10 → CursorPage")

        // Merge patch.
        let patched = try await client.patchRecord(
            path: .init(_type: type, id: record.id),
            body: .application_merge_hyphen_patch_plus_json(try .init(unvalidatedValue: ["n": 2])))
        guard case .ok(let patchedAnswer) = patched else { throw CheckFailure(description: "patchRecord answered \(patched)") }
        let after = try patchedAnswer.body.json.additionalProperties.value
        try check.that((after["n"] as? Int) == 2 && (after["title"] as? String) == "first", "the merge patch gave \(after)")
        check.passed("patchRecord → 200, n = 2, title kept")

        // A lambda whose name needs percent-encoding in the path (hello%3Asomeone).
        let called = try await client.callLambda(
            path: .init(name: "hello:someone"), body: .json(.init(args: .case1(try .init(unvalidatedValue: ["world"])))))
        guard case .ok(let calledAnswer) = called else {
            throw CheckFailure(description: "callLambda hello:someone answered \(called)")
        }
        let greeting = try calledAnswer.body.json.result.value as? String
        try check.that(greeting == "Hello, world!", "hello:someone answered \(String(describing: greeting))")
        check.passed("callLambda hello:someone → \"Hello, world!\"")

        // The error envelope of a 404.
        let missing = try await client.getRecord(path: .init(_type: type, id: "no-such-record"))
        guard case .notFound(let missingAnswer) = missing else {
            throw CheckFailure(description: "getRecord of a missing id answered \(missing)")
        }
        let envelope = try missingAnswer.body.json.error
        try check.that(envelope.code == "record_not_found" && !envelope.message.isEmpty, "the 404's envelope is \(envelope)")
        check.passed("getRecord of a missing id → 404 record_not_found")

        // A refresh ahead of expiry: the stored token is made to look expired, and the next call
        // goes out with a token AuthMiddleware got from the refresh token.
        let beforeExpiry = try await credential(of: authenticator)
        var expired = beforeExpiry
        expired.expiresAt = Date(timeIntervalSinceNow: -1)
        try await authenticator.setCredential(expired)
        let afterExpiryCall = try await client.getRecord(path: .init(_type: type, id: record.id))
        guard case .ok = afterExpiryCall else {
            throw CheckFailure(description: "getRecord after expiry answered \(afterExpiryCall)")
        }
        let refreshed = try await credential(of: authenticator)
        try check.that(refreshed.accessToken != beforeExpiry.accessToken, "the access token did not change after it expired")
        try check.that(
            refreshed.refreshToken != beforeExpiry.refreshToken, "the refresh token did not rotate: no refresh happened")
        check.passed("an expired token was refreshed ahead of the call (new access and refresh tokens)")

        // A refresh after a 401: the server refuses an access token it never issued; AuthMiddleware
        // refreshes once and sends the request again.
        var refused = refreshed
        refused.accessToken = "not-a-token-the-server-issued"
        refused.expiresAt = Date(timeIntervalSinceNow: 3600)
        try await authenticator.setCredential(refused)
        let afterRefusal = try await client.createRecord(
            path: .init(_type: type), body: .json(try .init(unvalidatedValue: ["title": "second"])))
        guard case .created(let secondAnswer) = afterRefusal else {
            throw CheckFailure(description: "createRecord after a refused token answered \(afterRefusal)")
        }
        let afterRetry = try await credential(of: authenticator)
        try check.that(afterRetry.refreshToken != refreshed.refreshToken, "no refresh followed the 401")
        try check.that(afterRetry.accessToken != refused.accessToken, "the refused token is still in use")
        check.passed("a 401 was answered by one refresh and a retry")

        // Delete both, then the record is gone.
        for id in [record.id, try secondAnswer.body.json.id] {
            let deleted = try await client.deleteRecord(path: .init(_type: type, id: id))
            guard case .noContent = deleted else { throw CheckFailure(description: "deleteRecord answered \(deleted)") }
        }
        let gone = try await client.getRecord(path: .init(_type: type, id: record.id))
        guard case .notFound = gone else { throw CheckFailure(description: "getRecord after delete answered \(gone)") }
        check.passed("deleteRecord → 204, then 404")

        try await outpost.shutdown()
        return check.count
    }

    static func credential(of authenticator: Authenticator) async throws -> Credential {
        guard let credential = try await authenticator.credential() else {
            throw CheckFailure(description: "signed out unexpectedly")
        }
        return credential
    }
}

/// Counts and prints the checks that held.
struct Checks {
    var count = 0

    func that(_ condition: Bool, _ failure: @autoclosure () -> String) throws {
        guard condition else { throw CheckFailure(description: failure()) }
    }

    mutating func passed(_ what: String) {
        count += 1
        print("ok \(count): \(what)")
    }
}
