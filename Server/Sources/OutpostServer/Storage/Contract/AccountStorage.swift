import HTTPTypes

/// Removing a user and everything that is theirs, in one transaction (`DELETE /me`,
/// `outpost users delete`).
public protocol AccountStorage: Sendable {
    /// Removes the user `id` in one transaction, and with them every token of every family one of
    /// their tokens belongs to, their authorization and device codes, browser sessions, idempotency
    /// entries, quota bounds and usage, roles and provider identity links. Their records are deleted
    /// (`recipient` `nil`) or given to the user `recipient`, through the `records` table's own
    /// triggers, so that each one shows in the change feed as a deletion or an update. The id is
    /// kept as deleted: a record write for it that commits after this is refused
    /// (401 `invalid_token`), so no record is ever left owned by a removed user.
    ///
    /// Files live in a file store of their own; the caller removes or moves them after this commits.
    ///
    /// - Returns: What was removed; `nil`, changing nothing, when there is no user `id`.
    /// - Throws: ``AccountDeletionFailure/unknownRecipient`` when `recipient` is not a user, or is `id`.
    func deleteUser(id: String, transferringTo recipient: String?) async throws -> AccountRemoval?
}

/// What ``AccountStorage/deleteUser(id:transferringTo:)`` removed.
public struct AccountRemoval: Sendable, Equatable {
    public var userID: String
    public var username: String
    /// The records deleted, or given to ``recipient``.
    public var records: Int
    /// The tokens removed (access and refresh, of every family the user had).
    public var tokens: Int
    /// The user who received the records, when they were transferred.
    public var recipient: String?

    public init(userID: String, username: String, records: Int, tokens: Int, recipient: String?) {
        self.userID = userID
        self.username = username
        self.records = records
        self.tokens = tokens
        self.recipient = recipient
    }
}

/// A deletion that could not be made; nothing was changed.
public enum AccountDeletionFailure: Error, Equatable {
    /// The user to transfer the records to does not exist, or is the user being deleted.
    case unknownRecipient
}

/// A record write for a user that was deleted meanwhile, refused by the database (a trigger on
/// `records` reads `deleted_users`): answered 401, as the user's tokens are gone.
enum AccountDeleted {
    /// The text the check raises.
    static let message = "account_deleted"

    static var error: ServerError {
        ServerError(
            .unauthorized, code: "invalid_token",
            message: "The account this access token belongs to was deleted; sign in with another account",
            headers: [.wwwAuthenticate: "Bearer error=\"invalid_token\""])
    }

    /// The 401 for an error of either database that the check raised; `nil` for any other.
    static func serverError(for error: any Error) -> ServerError? {
        fromSQLite(error) ?? fromPostgres(error)
    }
}
