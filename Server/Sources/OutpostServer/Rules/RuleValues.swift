import Foundation
@_spi(OutpostInternal) public import OutpostCore
public import OutpostExpressions

extension ExpressionValue {
    /// A JSON value as rules read it: every number a `Double` (an integer beyond 64 bits too).
    public init(_ json: JSONValue) {
        switch json {
        case .null: self = .null
        case .bool(let flag): self = .bool(flag)
        case .int(let number): self = .number(Double(number))
        case .double(let number): self = .number(number)
        case .largeInteger(let digits): self = .number(Double(digits) ?? .nan)
        case .string(let text): self = .string(text)
        case .array(let elements): self = .array(elements.map(ExpressionValue.init))
        case .object(let fields): self = .object(fields.mapValues(ExpressionValue.init))
        }
    }

    /// `record` for a rule: the record's fields, then the keys the server owns (`id`, `owner`,
    /// `private`, `created_at`, `updated_at`), which win over fields of the same name.
    public static func ruleRecord(
        fields: [String: JSONValue], id: String?, owner: String?, isPrivate: Bool, createdAt: Int64?, updatedAt: Int64?
    ) -> ExpressionValue {
        var object = fields.mapValues(ExpressionValue.init)
        object["id"] = id.map(ExpressionValue.string) ?? .null
        object["owner"] = owner.map(ExpressionValue.string) ?? .null
        object["private"] = .bool(isPrivate)
        object["created_at"] = createdAt.map { .string(StoredRecord.timestamp($0)) } ?? .null
        object["updated_at"] = updatedAt.map { .string(StoredRecord.timestamp($0)) } ?? .null
        return .object(object)
    }
}

extension StoredRecord {
    /// This record as a rule's `record` reads it.
    public var ruleValue: ExpressionValue {
        get throws {
            .ruleRecord(
                fields: try fields, id: id, owner: owner, isPrivate: isPrivate, createdAt: createdAt, updatedAt: updatedAt)
        }
    }

    /// This record as `rules` read it: without parsing its fields when none of them reads one (the
    /// defaults, say), so a read decided on the owner and visibility costs no JSON parsing.
    func ruleValue(for rules: AccessRule...) throws -> ExpressionValue {
        if rules.contains(where: \.readsFields) { return try ruleValue }
        return .ruleRecord(
            fields: [:], id: id, owner: owner, isPrivate: isPrivate, createdAt: createdAt, updatedAt: updatedAt)
    }
}

extension StoredFile {
    /// This file as a file rule's `file` reads it (an upload allowed without a user has no owner).
    var ruleValue: ExpressionValue {
        Self.ruleValue(
            name: name, owner: owner.isEmpty ? nil : owner, size: size, contentType: contentType, sha256: sha256,
            updatedAt: updatedAt)
    }

    /// `{"name", "owner", "size", "content_type", "sha256", "updated_at"}`, `null` where unknown.
    static func ruleValue(
        name: String, owner: String?, size: Int64?, contentType: String, sha256: String?, updatedAt: Date?
    ) -> ExpressionValue {
        .object([
            "name": .string(name), "owner": owner.map(ExpressionValue.string) ?? .null,
            "size": size.map { .number(Double($0)) } ?? .null, "content_type": .string(contentType),
            "sha256": sha256.map(ExpressionValue.string) ?? .null,
            "updated_at": updatedAt.map { .string(StoredRecord.timestamp(Int64(($0.timeIntervalSince1970 * 1000).rounded()))) }
                ?? .null,
        ])
    }
}
