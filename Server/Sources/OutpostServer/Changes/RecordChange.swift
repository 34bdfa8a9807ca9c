import Foundation
import OutpostExpressions

/// One row of the change feed: a record was created, updated or deleted.
///
/// Changes are written in the same transaction as the record write they describe, so a change is
/// visible exactly when its record write is. ``position`` grows with every change (across all
/// types) in commit order, and is the resume point of `GET /records/{type}/changes`.
public struct RecordChange: Sendable, Hashable {
    /// What happened to the record.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case created, updated, deleted
    }

    /// Where this change sits in the feed; larger is later.
    public var position: Int64
    public var kind: Kind
    /// The record after the change (for ``Kind/created`` and ``Kind/updated``), or as it was when it
    /// was deleted, its last fields included (`{}` for a deletion stored before changes kept
    /// them): type, id, owner, visibility and version are always set. A deletion's event never
    /// sends its fields.
    public var record: StoredRecord
    /// When the change was written, in milliseconds since 1970; retention counts from it.
    public var at: Int64

    public init(position: Int64, kind: Kind, record: StoredRecord, at: Int64) {
        self.position = position
        self.kind = kind
        self.record = record
        self.at = at
    }

    /// The event's data: `{"id", "change", "version", "record"}`, the record left out of deletions.
    var eventData: String {
        var text = "{\"id\":\""
        text += record.id
        text += "\",\"change\":\"\(kind.rawValue)\",\"version\":\(record.version)"
        if kind != .deleted {
            text += ",\"record\":"
            text += record.wireText
        }
        text += "}"
        return text
    }

    /// The data of a `left` event (a record that stopped matching a stream's filter): `{"id",
    /// "change": "left", "version"}`, without the record.
    var leftEventData: String {
        "{\"id\":\"\(record.id)\",\"change\":\"left\",\"version\":\(record.version)}"
    }

    /// Whether the record after this change matches a stream's filter, evaluated on the record
    /// as rules read it. A deletion never matches.
    func matches(_ filter: ListFilter) -> Bool {
        guard kind != .deleted, let value = try? record.ruleValue else { return false }
        return filter.condition.decide(in: ExpressionEnvironment(["record": value]))
    }

    /// Whether `caller` may see this change: the type's `subscribe` and `read` rules both grant
    /// the record (as it is after the change; a deleted record as it was when it was deleted).
    func isVisible(to caller: RuleCaller, under rules: AccessRules) -> Bool {
        let subscribe = rules.rule(for: record.type, .subscribe)
        let read = rules.rule(for: record.type, .read)
        guard let value = try? record.ruleValue(for: subscribe, read) else { return false }
        let environment = AccessRules.environment(caller: caller, record: value)
        return subscribe.condition.decide(in: environment) && read.condition.decide(in: environment)
    }
}

/// The oldest and newest positions a feed can resume from.
public struct ChangeBounds: Sendable, Hashable {
    /// Changes at or below this position were removed by retention: resuming from a smaller
    /// position would miss some. `0` when nothing was removed yet.
    public var prunedThrough: Int64
    /// The position of the newest change, `0` when there is none.
    public var latest: Int64

    public init(prunedThrough: Int64, latest: Int64) {
        self.prunedThrough = prunedThrough
        self.latest = latest
    }
}
