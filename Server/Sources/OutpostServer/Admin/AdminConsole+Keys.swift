import Foundation
import Hummingbird

/// `/admin/keys`: the keys that sign ID tokens, and rotating them as `outpost keys rotate` does
/// (``SigningKeyRotation``).
extension AdminConsole {
    static let keysPath = "\(root)/keys"

    func addKeys(to router: Router<OutpostRequestContext>) {
        get(router, RouterPath(Self.keysPath)) { visit in try await keysPage(visit) }
        post(router, RouterPath("\(Self.keysPath)/rotate"), form: "signing_key.rotate") { visit, _ in
            let rotated = try await SigningKeyRotation.rotate(
                in: storage, gracePeriod: signingKeyGracePeriod, actor: visit.admin.id,
                clientAddress: visit.context.clientAddress, logger: auth.logger)
            let removed = rotated.removed > 0 ? " Deleted \(rotated.removed) key(s) retired beyond the grace period." : ""
            return seeOther(Self.keysPath, notice: "New signing key \(rotated.key.kid) is in use.\(removed)")
        }
    }

    func keysPage(_ visit: AdminVisit) async throws -> Response {
        // Keys are few: one in use, and those retired within the grace period (older ones are deleted at rotation).
        let keys = try await storage.signingKeys()
        let rows = keys.prefix(Self.pageSize).map { key in
            [
                AdminHTML.code(key.kid), HTMLPage.escape(key.algorithm), AdminHTML.time(key.createdAt),
                key.retiredAt.map { "retired " + AdminHTML.time($0) } ?? "<strong>in use</strong>",
            ]
        }
        let grace = Int(signingKeyGracePeriod.components.seconds / 3600)
        let body = """
            \(AdminHTML.table(
                id: "keys", caption: "Signing keys, newest first", headers: ["Key id (kid)", "Algorithm", "Created", "State"],
                rows: Array(rows), empty: "No signing key yet: the server makes one when it first signs an ID token."))
            <h2 id="rotate-heading">Rotate</h2>
            <p>A new key signs from now on, on every instance. The replaced key stays in the JWKS for \(grace) hours, so ID tokens signed just before still verify; keys retired longer ago are deleted.</p>
            \(form(visit, name: "signing_key.rotate", action: "\(Self.keysPath)/rotate", submit: "Rotate signing key", id: "rotate"))
            """
        return page(visit, title: "Signing keys", section: .keys, body: body)
    }
}
