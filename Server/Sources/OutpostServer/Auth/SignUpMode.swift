public import Foundation
@_spi(OutpostInternal) import OutpostSupport

/// Who may create an account with `POST /users` (``ServerConfiguration/signUp``,
/// `outpost serve --signup`).
public enum SignUpMode: String, Sendable, CaseIterable {
    /// Anyone may sign up (within ``ServerConfiguration/signUpsPerAddress``).
    case open
    /// A sign-up must carry a one-time invite code from `outpost users invite` in its `invite`
    /// field; the code is spent by the sign-up it creates.
    case invite
    /// Nobody signs up: `POST /users` answers 403 `signup_closed`. The operator adds users with
    /// `outpost users add`.
    case closed
}

/// One-time invite codes for ``SignUpMode/invite``: what `outpost users invite` makes.
public enum Invites {
    /// The prefix of every invite code.
    public static let prefix = "inv_"
    /// The longest an invite may stay valid: 90 days.
    public static let maxLifetime: Duration = .seconds(90 * 24 * 3600)
    /// The most characters of an invite code a sign-up may send (a code is 47).
    public static let maxCodeLength = 128

    /// 403 `invite_invalid`: the answer to a code that is unknown, spent or expired.
    static let invalid = ServerError(
        .forbidden, code: "invite_invalid",
        message: "That invite code is unknown, spent or expired; ask the server's operator for a new one (outpost users invite)")

    /// Makes a code valid for `lifetime` (at most ``maxLifetime``), stores its hash, and returns
    /// the code (shown once; only its hash is kept) and when it expires.
    public static func issue(in storage: any InviteStorage, lifetime: Duration) async throws -> (code: String, expires: Date) {
        let code = Secrets.token(prefix: prefix)
        let expiresAt = Identifiers.nowMilliseconds() + min(lifetime, maxLifetime).inMilliseconds
        try await storage.saveInvite(hash: Secrets.hash(code), expiresAt: expiresAt)
        return (code, Date(timeIntervalSince1970: Double(expiresAt) / 1000))
    }
}
