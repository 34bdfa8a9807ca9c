import Foundation
import Outpost
import OutpostServer

/// A user deletes their account from the app: `Authenticator.deleteAccount()` sends `DELETE /me`,
/// the server removes the user, their tokens and their records, and the local credential goes.
enum AccountDeletionTour {
    static func run(baseURL: URL, log: TourLog) async throws {
        log.section("Deleting an account")
        let plain = OutpostClient(configuration: .init(baseURL: baseURL))
        defer { Task { try? await plain.shutdown() } }
        _ = try await plain.send(.post("/users", json: ["username": "departing", "password": "demo-password-1"]))
        let authenticator = Authenticator(
            configuration: .init(
                registration: ClientRegistration(
                    clientID: OutpostServer.cliPasswordClientID, scopes: ["records:read", "records:write", "profile"]),
                endpoints: .outpost(base: baseURL), store: InMemoryCredentialStore()),
            client: plain)
        let credential = try await authenticator.signIn(username: "departing", password: "demo-password-1")
        let api = OutpostClient(
            configuration: .init(baseURL: baseURL), middlewares: [AuthMiddleware(authenticator: authenticator)])
        defer { Task { try? await api.shutdown() } }
        let note = try await api.send(.post("/records/notes", json: ["text": "theirs"]), decoding: JSONValue.self)
        let id = note["id"]?.stringValue ?? "?"
        log.step("departing signed up, signed in and wrote notes/\(id)")
        try await authenticator.deleteAccount()
        log.step(
            "deleteAccount(): DELETE /me → 204; the local credential is gone: \(try await authenticator.credential() == nil)")
        var me = Request.get("/me")
        me.headers[.authorization] = "Bearer \(credential.accessToken)"
        let status: Int
        do {
            status = try await plain.send(me).status
        } catch let error as OutpostError {
            status = error.status ?? 0
        }
        log.detail(
            "GET /me with the old access token → \(status); GET /records/notes/\(id) → \(try await exists(id, plain) ? 200 : 404)"
        )
    }

    static func exists(_ id: String, _ client: OutpostClient) async throws -> Bool {
        do {
            _ = try await client.send(.get("/records/notes/\(id)"))
            return true
        } catch let error as OutpostError where error.status == 404 {
            return false
        }
    }
}
