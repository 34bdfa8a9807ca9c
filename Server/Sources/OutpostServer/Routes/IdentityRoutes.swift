import Foundation
import Hummingbird
@_spi(OutpostInternal) import OutpostCore

/// `POST /me/identities`: links an upstream provider's identity to the signed-in user, who sends an
/// ID token of that provider (and its nonce), so that it signs in to this account from then on.
struct IdentityRoutes: Sendable {
    let auth: AuthService
    let federation: IDTokenExchange
    let maxBodyBytes: Int

    /// The fields of the body; any other is refused.
    static let fields: Set<String> = ["provider", "id_token", "nonce"]

    func add(to router: Router<OutpostRequestContext>) {
        let signedIn = router.group().add(middleware: AuthenticationMiddleware(auth: auth))
            .add(middleware: RequireCallerMiddleware(scope: Scope.profile))
        signedIn.post("/me/identities") { request, context in
            let caller = try context.requireCaller()
            guard let userID = caller.userID else {
                throw ServerError(.forbidden, code: "user_required", message: "Linking an identity needs a user's token")
            }
            let body = try await request.decodeJSON(limit: maxBodyBytes, maxDepth: 2, maxKeys: 8)
            if case .object(let fields) = body, let unknown = fields.keys.sorted().first(where: { !Self.fields.contains($0) }) {
                throw ServerError.badRequest(
                    "invalid_identity", "Unknown field \(unknown.debugDescription); send only provider, id_token and nonce")
            }
            guard let provider = body["provider"]?.stringValue, let token = body["id_token"]?.stringValue else {
                throw ServerError.badRequest(
                    "invalid_identity", "Send {\"provider\": \"apple\", \"id_token\": \"...\", \"nonce\": \"...\"}")
            }
            // An unknown provider is a missing resource, not a refused token.
            guard try await federation.providers.upstreamProvider(name: provider) != nil else {
                throw ServerError.notFound(
                    "unknown_provider",
                    "No upstream provider '\(provider)' on this server; its operator adds one with `outpost providers add`")
            }
            do {
                let (found, identity) = try await federation.link(
                    token, provider: provider, nonce: body["nonce"]?.stringValue, userID: userID, address: context.clientAddress)
                return Response.json(
                    [
                        "provider": .string(found.name), "issuer": .string(identity.issuer),
                        "subject": .string(identity.subject),
                    ], status: .created)
            } catch let error as OAuthError {
                // The token's refusals as this route's errors: the same code and description.
                throw ServerError(error.status, code: error.code, message: error.description, headers: error.headers)
            }
        }
    }
}
