import Foundation

/// What an administrator does to users (the console's users screens, `outpost users disable`,
/// `enable`, `sign-out`): disabling and enabling them, signing them out everywhere, and finding them.
public protocol UserAdminStorage: Sendable {
    /// In one transaction: marks the user disabled at `now` (a user disabled already keeps their
    /// first time) and signs them out everywhere, as ``signOutEverywhere(userID:)`` does. A
    /// disabled user cannot sign in in any way. Returns `false`, changing nothing, when there is no
    /// user `id`.
    func disableUser(id: String, now: Int64) async throws -> Bool
    /// Lets a disabled user sign in again; nothing that disabling revoked comes back. Returns
    /// `false` when there is no user `id`.
    func enableUser(id: String) async throws -> Bool
    /// In one transaction: revokes every token of every family the user has tokens in, removes
    /// their browser sessions, spends their unused authorization codes and denies their approved
    /// device codes. Returns `false`, changing nothing, when there is no user `userID`.
    func signOutEverywhere(userID: String) async throws -> Bool
    /// A page of users ordered by username (ignoring case), those after the username `after`,
    /// whose username or e-mail address contains `search` (ignoring case; `%` and `_` are plain
    /// characters), at most `limit` (1 to ``UserSearch/maxPageSize``).
    func users(_ search: UserSearch, after: String?, limit: Int) async throws -> UserPage
}

/// What a search of users matches: a part of a username or an e-mail address.
public struct UserSearch: Sendable, Equatable {
    /// The most characters of a search.
    public static let maxQueryLength = 100
    /// The most users of one page.
    public static let maxPageSize = 50

    /// The text searched for, trimmed; empty matches every user.
    public let text: String

    /// `nil` when `text` is longer than ``maxQueryLength`` characters.
    public init?(_ text: String) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard trimmed.count <= Self.maxQueryLength else { return nil }
        self.text = trimmed
    }

    /// Every user.
    public static let everyone = UserSearch("")!

    /// The `LIKE` pattern that finds ``text`` anywhere (lower case), with `\`, `%` and `_` escaped
    /// by `\` (the statement says `ESCAPE '\'`).
    var likePattern: String {
        var pattern = "%"
        for character in text.lowercased() {
            if character == "\\" || character == "%" || character == "_" { pattern.append("\\") }
            pattern.append(character)
        }
        return pattern + "%"
    }

    /// A page size within 1 ... ``maxPageSize``.
    static func pageSize(_ limit: Int) -> Int { min(max(limit, 1), maxPageSize) }
}

/// One page of ``UserAdminStorage/users(_:after:limit:)``.
public struct UserPage: Sendable, Equatable {
    public var users: [UserSummary]
    /// The username to pass as `after` for the next page; `nil` on the last page.
    public var next: String?

    public init(users: [UserSummary], next: String?) {
        self.users = users
        self.next = next
    }

    /// The page of `rows` read with one row more than `limit`.
    init(rows: [UserSummary], limit: Int) {
        let page = Array(rows.prefix(limit))
        self.init(users: page, next: rows.count > limit ? page.last?.username : nil)
    }
}

/// A user as the console's list shows them.
public struct UserSummary: Sendable, Equatable {
    public var id: String
    public var username: String
    public var email: String?
    public var emailVerified: Bool
    /// Sorted.
    public var roles: [String]
    /// Milliseconds since 1970; `nil` while the user may sign in.
    public var disabledAt: Int64?
    /// Milliseconds since 1970.
    public var createdAt: Int64

    public init(
        id: String, username: String, email: String?, emailVerified: Bool, roles: [String], disabledAt: Int64?, createdAt: Int64
    ) {
        self.id = id
        self.username = username
        self.email = email
        self.emailVerified = emailVerified
        self.roles = roles
        self.disabledAt = disabledAt
        self.createdAt = createdAt
    }
}
