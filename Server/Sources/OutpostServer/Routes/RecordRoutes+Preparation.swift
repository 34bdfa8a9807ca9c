import Foundation
@_spi(OutpostInternal) import OutpostCore
import OutpostExpressions

/// What every write of a record goes through before the storage writes it, one function per method,
/// shared by the single-record routes and `POST /records/batch`: the access rule of the write is
/// checked, and the fields to store are computed. Each runs where the write sees the record it
/// changes (inside the write's transaction), so nothing changes between the check and the write.
extension RecordRoutes {
    /// A create: throws unless the create rule grants `caller` the record `fields` would make;
    /// returns the fields to store.
    ///
    /// - Parameter body: the request's JSON as the rule's `body` reads it.
    static func prepareCreate(
        _ rules: AccessRules, caller: RuleCaller, type: String, fields: [String: JSONValue], body: JSONValue, owner: String?,
        isPrivate: Bool
    ) throws -> [String: JSONValue] {
        let wouldBe = ExpressionValue.ruleRecord(
            fields: fields, id: nil, owner: owner, isPrivate: isPrivate, createdAt: nil, updatedAt: nil)
        try authorize(rules, .create, type: type, caller: caller, record: wouldBe, body: ExpressionValue(body))
        return fields
    }

    /// A replacement of `current`: throws unless the update rule grants `caller` the record as it
    /// is; returns the fields to store.
    static func prepareReplace(
        _ rules: AccessRules, caller: RuleCaller, current: StoredRecord, fields: [String: JSONValue], body: JSONValue
    ) throws -> [String: JSONValue] {
        let value = try current.ruleValue(for: rules.rule(for: current.type, .update))
        try authorize(rules, .update, type: current.type, caller: caller, record: value, body: ExpressionValue(body))
        return fields
    }

    /// A merge patch (RFC 7396) of `current`: throws unless the update rule grants `caller` the
    /// record as it is; returns the patched fields to store.
    static func preparePatch(_ rules: AccessRules, caller: RuleCaller, current: StoredRecord, patch: JSONValue) throws
        -> [String: JSONValue]
    {
        try authorize(
            rules, .update, type: current.type, caller: caller, record: try current.ruleValue, body: ExpressionValue(patch))
        guard case .object(var fields) = MergePatch.apply(patch, to: .object(try current.fields)) else {
            throw ServerError.badRequest("invalid_patch", "The patch must leave the record a JSON object")
        }
        for key in StoredRecord.serverKeys { fields[key] = nil }
        return fields
    }

    /// A delete of `current`: throws unless the delete rule grants `caller` the record as it is.
    static func prepareDelete(_ rules: AccessRules, caller: RuleCaller, current: StoredRecord) throws {
        let value = try current.ruleValue(for: rules.rule(for: current.type, .delete))
        try authorize(rules, .delete, type: current.type, caller: caller, record: value)
    }

    /// Whether the read rule lets `caller` see `record`: a write of a record the caller may not
    /// read is answered 404, as missing, so its existence is not revealed.
    static func isReadable(_ record: StoredRecord, caller: RuleCaller, rules: AccessRules) throws -> Bool {
        let rule = rules.rule(for: record.type, .read)
        return rule.condition.decide(in: AccessRules.environment(caller: caller, record: try record.ruleValue(for: rule)))
    }
}
