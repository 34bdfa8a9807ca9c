import Foundation

/// One entry of the audit log: who did what to what, from where.
///
/// Never holds a password, a token, a code or a secret: ``detail`` is for names, ids and counts,
/// and is bounded (``maxDetailKeys`` keys, each value cut to ``maxDetailValueLength`` characters).
public struct AuditEvent: Sendable, Equatable {
    /// Assigned by the storage, in order of appending.
    public var id: Int64
    /// Milliseconds since 1970 (now, unless the initializer is given another time).
    public var time: Int64
    /// The user id of the signed-in user who acted, ``AuditEvent/operatorActor`` for the CLI, or
    /// `nil` when nobody is known (a failed sign-in).
    public var actor: String?
    /// What happened, as `noun.verb` (``AuditAction``).
    public var action: String
    /// What it was done to: a user id, a client id, a record type, a provider name.
    public var subject: String?
    /// The client's address as the server saw it (after `--trusted-proxy`); `nil` for the CLI.
    public var clientAddress: String?
    /// A few names and ids about the event (the sign-in method, the client, a role).
    public var detail: [String: String]

    /// The actor of what `outpost` commands do to the database directly.
    public static let operatorActor = "operator"
    /// The most keys ``detail`` keeps (the first, sorted).
    public static let maxDetailKeys = 8
    /// The longest key or value ``detail`` keeps; longer ones are cut.
    public static let maxDetailValueLength = 200
    /// The longest actor, subject or address kept; longer ones are cut.
    public static let maxFieldLength = 200

    public init(
        id: Int64 = 0, time: Int64? = nil, actor: String?,
        action: String, subject: String? = nil, clientAddress: String? = nil, detail: [String: String] = [:]
    ) {
        self.id = id
        self.time = time ?? Identifiers.nowMilliseconds()
        self.actor = actor.map { Self.cut($0, Self.maxFieldLength) }
        self.action = Self.cut(action, 64)
        self.subject = subject.map { Self.cut($0, Self.maxFieldLength) }
        self.clientAddress = clientAddress.map { Self.cut($0, Self.maxFieldLength) }
        var bounded: [String: String] = [:]
        for (key, value) in detail.sorted(by: { $0.key < $1.key }).prefix(Self.maxDetailKeys) {
            bounded[Self.cut(key, 32)] = Self.cut(value, Self.maxDetailValueLength)
        }
        self.detail = bounded
    }

    static func cut(_ text: String, _ length: Int) -> String {
        text.count <= length ? text : String(text.prefix(length))
    }

    /// ``detail`` as the JSON object text stored in the database (sorted keys).
    package var detailText: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(detail)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    /// The stored JSON object text back as ``detail`` (empty when it is not one).
    package static func detail(fromText text: String) -> [String: String] {
        (try? JSONDecoder().decode([String: String].self, from: Data(text.utf8))) ?? [:]
    }
}

/// The actions the server and the CLI write to the audit log.
public enum AuditAction {
    /// A password, provider or upstream ID-token sign-in that succeeded; `detail.method` says which.
    public static let signInSucceeded = "sign_in.succeeded"
    /// A sign-in refused for wrong credentials or a refused token.
    public static let signInFailed = "sign_in.failed"
    /// Sign-ins from one address refused for its rate limit: one event per address per limit
    /// window, however many were refused.
    public static let signInRateLimited = "sign_in.rate_limited"
    /// A device code approved or denied on the device page.
    public static let deviceApproved = "device.approved"
    public static let deviceDenied = "device.denied"
    public static let userSignedUp = "user.signed_up"
    public static let userAdded = "user.added"
    public static let userDeleted = "user.deleted"
    public static let userRolesChanged = "user.roles_changed"
    public static let userEntitlementsChanged = "user.entitlements_changed"
    public static let userQuotaChanged = "user.quota_changed"
    public static let userDisabled = "user.disabled"
    public static let userEnabled = "user.enabled"
    /// Every token, browser session and pending code of a user ended, without disabling them.
    public static let userSignedOut = "user.signed_out"
    public static let inviteIssued = "invite.issued"
    public static let clientAdded = "client.added"
    public static let clientRemoved = "client.removed"
    /// A confidential client's secret replaced (the admin console); `detail.tokens_revoked` says
    /// whether its tokens were revoked with it.
    public static let clientSecretRotated = "client.secret_rotated"
    public static let ruleChanged = "rule.changed"
    /// A record's fields replaced by an admin in the console; the subject is `type/id`.
    public static let recordUpdated = "record.updated"
    /// A record deleted by an admin in the console; the subject is `type/id`.
    public static let recordDeleted = "record.deleted"
    public static let providerAdded = "provider.added"
    public static let providerRemoved = "provider.removed"
    public static let signingKeyRotated = "signing_key.rotated"
}
