public import Logging

/// What happens to a deleted user's records and files (``ServerConfiguration/accountDeletion``,
/// `outpost serve --on-account-deletion`), and who is told first.
public struct AccountDeletionConfiguration: Sendable {
    /// What becomes of the records and files.
    public enum Data: Sendable, Equatable {
        /// They are deleted: each record shows in the change feed as a deletion.
        case delete
        /// They are given to the user of this username: each record shows as an update with the new owner.
        case transfer(toUsername: String)

        /// `delete`, or `transfer:USERNAME`; `nil` for anything else.
        public init?(argument: String) {
            if argument == "delete" {
                self = .delete
            } else if argument.hasPrefix("transfer:"), argument.count > "transfer:".count {
                self = .transfer(toUsername: String(argument.dropFirst("transfer:".count)))
            } else {
                return nil
            }
        }
    }

    /// Default: ``Data/delete``.
    public var data: Data = .delete
    /// Told about each deletion, in order, before anything is removed. Default: none. Before them,
    /// the server itself revokes the refresh tokens upstream providers issued for the user.
    public var hooks: [any AccountDeletionHook] = []

    public init(data: Data = .delete, hooks: [any AccountDeletionHook] = []) {
        self.data = data
        self.hooks = hooks
    }
}

/// Told before an account is deleted (`DELETE /me`, `outpost users delete`), while the user and
/// everything of theirs still exist: the place to revoke what an upstream provider issued for them
/// (Sign in with Apple's refresh tokens, say) or to remove data the server does not know about.
///
/// Hooks run in the order of ``AccountDeletionConfiguration/hooks``. One that throws stops the
/// deletion, and nothing is removed: `DELETE /me` answers the ``ServerError`` it threw, or 502
/// `account_deletion_failed` for any other error, and the user may try again.
public protocol AccountDeletionHook: Sendable {
    func accountWillBeDeleted(_ account: DeletingAccount) async throws
}

/// The account an ``AccountDeletionHook`` is told about.
public struct DeletingAccount: Sendable {
    public var userID: String
    public var username: String
    /// The user who receives the records and files, when the server transfers them.
    public var recipientID: String?
    public var logger: Logger
}

/// Deletes accounts: the hooks, then one storage transaction, then the files (a store of their own,
/// so after the commit). `DELETE /me` and `outpost users delete` both go through it.
package struct AccountDeleter: Sendable {
    let storage: any Storage
    let files: any FileStorage
    let configuration: AccountDeletionConfiguration
    let changes: ChangeFeed?
    let logger: Logger
    /// Revokes the user's upstream refresh tokens first (``UpstreamTokenRevocation``).
    let revocation: UpstreamTokenRevocation

    package init(
        storage: any Storage, files: any FileStorage, configuration: AccountDeletionConfiguration, changes: ChangeFeed? = nil,
        federation: FederationConfiguration = FederationConfiguration(), logger: Logger
    ) {
        self.storage = storage
        self.files = files
        self.configuration = configuration
        self.changes = changes
        self.logger = logger
        self.revocation = UpstreamTokenRevocation(storage: storage, configuration: federation)
    }

    /// Deletes the user `userID`, giving their records and files to `recipient` (a username) when
    /// given, else as the configuration says. Returns what was removed and how many files; `nil`
    /// when there is no such user.
    package func delete(userID: String, recipient: String? = nil) async throws -> (removal: AccountRemoval, files: Int)? {
        guard let user = try await storage.user(id: userID) else { return nil }
        var recipientID: String?
        let recipientName: String? =
            switch configuration.data {
            case _ where recipient != nil: recipient
            case .delete: nil
            case .transfer(let name): name
            }
        if let recipientName {
            guard let found = try await storage.user(username: recipientName) else {
                throw ServerError(
                    .serviceUnavailable, code: "account_deletion_unavailable",
                    message: "The records of deleted accounts go to '\(recipientName)', and there is no such user; "
                        + "the server's operator must add it or change --on-account-deletion")
            }
            guard found.id != userID else {
                throw ServerError(
                    .conflict, code: "account_is_recipient",
                    message: "This account receives the records of deleted accounts, so it cannot be deleted; "
                        + "ask the server's operator")
            }
            recipientID = found.id
        }
        let account = DeletingAccount(userID: userID, username: user.username, recipientID: recipientID, logger: logger)
        for hook in [revocation as any AccountDeletionHook] + configuration.hooks {
            do {
                try await hook.accountWillBeDeleted(account)
            } catch let error as ServerError {
                throw error
            } catch {
                logger.error("account deletion hook failed", metadata: ["user": "\(userID)", "error": "\(error)"])
                throw ServerError(
                    .badGateway, code: "account_deletion_failed",
                    message:
                        "The account could not be deleted: a step of the server's failed; nothing was removed, try again later")
            }
        }
        let removal: AccountRemoval?
        do {
            removal = try await storage.deleteUser(id: userID, transferringTo: recipientID)
        } catch AccountDeletionFailure.unknownRecipient {
            throw ServerError(
                .serviceUnavailable, code: "account_deletion_unavailable",
                message: "The user receiving the records was removed meanwhile; try again")
        }
        guard let removal else { return nil }
        changes?.changesCommitted()
        let files = try await files.removeFiles(owner: userID, transferringTo: recipientID)
        logger.info(
            "account deleted",
            metadata: [
                "user": "\(userID)", "records": "\(removal.records)", "files": "\(files)",
                "transferred_to": "\(recipientID ?? "-")",
            ])
        return (removal, files)
    }
}
