import Foundation
import Hummingbird
import OutpostCore

/// `POST /users` (sign-up), `GET /me`, and `POST /auth/login` (custom providers).
struct UserRoutes: Sendable {
    let auth: AuthService
    let maxBodyBytes: Int

    func add(to router: Router<OutpostRequestContext>) {
        router.post("/users") { request, _ in
            let body = try await request.decodeJSON(limit: maxBodyBytes)
            guard let username = body["username"]?.stringValue, let password = body["password"]?.stringValue else {
                throw ServerError.badRequest("invalid_user", "Send {\"username\": ..., \"password\": ...}")
            }
            let user = try await auth.signUp(username: username, password: password)
            return Response.json(
                ["id": .string(user.id), "username": .string(user.username)], status: .created,
                headers: [.location: "/me"])
        }
        router.get("/me") { request, _ in
            guard let caller = try await auth.authenticate(request) else {
                throw AuthService.unauthorized("Sign in first: send 'Authorization: Bearer <access token>'")
            }
            try caller.require(Scope.profile)
            guard let userID = caller.userID, let user = try await auth.storage.user(id: userID) else {
                return Response.json(["client_id": .string(caller.clientID), "scope": .string(caller.scope), "user": nil])
            }
            return Response.json([
                "id": .string(user.id), "username": .string(user.username),
                "entitlements": .array(user.entitlements.map(JSONValue.string)),
                "client_id": .string(caller.clientID), "scope": .string(caller.scope),
            ])
        }
        router.post("/auth/login") { request, context in
            let body = try await request.decodeJSON(limit: maxBodyBytes)
            guard let provider = body["provider"]?.stringValue, let authData = body["auth_data"], case .object = authData,
                let clientID = body["client_id"]?.stringValue
            else {
                throw ServerError.badRequest(
                    "invalid_login", "Send {\"provider\": \"com.example\", \"auth_data\": {...}, \"client_id\": \"...\"}")
            }
            guard let client = try await auth.storage.client(id: clientID) else {
                throw ServerError.badRequest(
                    "invalid_client", "Unknown client '\(clientID)'; register it with `outpost clients add`")
            }
            let tokens = try await auth.signIn(
                provider: provider, authData: authData, client: client, address: context.clientAddress)
            return Response.json(tokens, headers: [.cacheControl: "no-store"])
        }
    }
}
