import Foundation
import Hummingbird
@_spi(OutpostInternal) import OutpostCore

/// The signed-in user's identities at upstream providers:
/// - `GET /me/identities` lists them;
/// - `POST /me/identities` links one: the user sends an ID token of that provider (and its nonce),
///   so that the identity signs in to this account from then on;
/// - `DELETE /me/identities/{provider}/{subject}` unlinks one, unless it is the user's only way to
///   sign in (no password, no other identity): 409 `last_sign_in_method`.
struct IdentityRoutes: Sendable {
    let auth: AuthService
    let federation: IDTokenExchange
    let maxBodyBytes: Int

    /// The fields of the body; any other is refused.
    static let fields: Set<String> = ["provider", "id_token", "nonce"]

    func add(to router: Router<OutpostRequestContext>) {
        let signedIn = router.group().add(middleware: AuthenticationMiddleware(auth: auth))
            .add(middleware: RequireCallerMiddleware(scope: Scope.profile))
        signedIn.get("/me/identities") { _, context in
            let userID = try Self.userID(context)
            let registered = try await federation.providers.upstreamProviders()
            let names = Dictionary(registered.map { ($0.issuer, $0.name) }, uniquingKeysWith: { first, _ in first })
            let identities = try await federation.providers.linkedIdentities(userID: userID)
            return Response.json([
                "identities": .array(
                    identities.map { identity in
                        .object([
                            "provider": .string(names[identity.provider] ?? identity.provider),
                            "issuer": names[identity.provider] == nil ? .null : .string(identity.provider),
                            "subject": .string(identity.subject),
                            "email": identity.email.map(JSONValue.string) ?? .null,
                            "email_verified": identity.emailVerified.map(JSONValue.bool) ?? .null,
                        ])
                    })
            ])
        }
        signedIn.delete("/me/identities/{provider}/{subject}") { _, context in
            let userID = try Self.userID(context)
            let name = try context.pathParameter("provider") ?? ""
            let subject = try context.pathParameter("subject") ?? ""
            // A registered provider's identities are stored under its issuer; a sign-in plugin's
            // under the plugin's provider name.
            let key = try await federation.providers.upstreamProvider(name: name)?.issuer ?? name
            switch try await federation.providers.unlinkIdentity(provider: key, subject: subject, userID: userID) {
            case .unlinked:
                auth.logger.info("identity unlinked", metadata: ["user": "\(userID)", "provider": "\(name)"])
                return Response(status: .noContent)
            case .notLinked:
                throw ServerError.notFound(
                    "identity_not_linked",
                    "No identity '\(subject)' of provider '\(name)' is linked to this account; GET /me/identities lists them")
            case .lastSignInMethod:
                throw ServerError(
                    .conflict, code: "last_sign_in_method",
                    message: "This identity is the account's only way to sign in; link another identity or set a password first")
            }
        }
        signedIn.post("/me/identities") { request, context in
            let userID = try Self.userID(context)
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

    private static func userID(_ context: OutpostRequestContext) throws -> String {
        guard let userID = try context.requireCaller().userID else {
            throw ServerError(.forbidden, code: "user_required", message: "A user's identities need a user's token")
        }
        return userID
    }
}
