import Foundation

/// Which keys of a list response to read; passed to ``ListBody`` through the decoder's user info.
struct ListKeys: Sendable {
    var itemsKey: String?
    var metaKeys: [String]
}

extension CodingUserInfoKey {
    static let outpostListKeys = CodingUserInfoKey(rawValue: "outpost.listKeys")!
}

/// A list response decoded in one pass: the items straight into `[Item]`, and the few pagination keys
/// as untyped JSON. Nothing else of the body is materialized.
struct ListBody<Item: Decodable>: Decodable {
    var items: [Item]
    var meta: [String: JSONValue]

    init(items: [Item], meta: [String: JSONValue]) {
        self.items = items
        self.meta = meta
    }

    /// Untyped items (`Item` is ``JSONValue``) read from the bytes in one pass by
    /// ``JSONValue/init(parsing:)``, without the `Decoder` guessing at each value's kind; `nil` for
    /// typed items, for a decoder with settings the parser does not follow (key strategies, JSON5),
    /// or for a body of another shape (the decoder then reports what is wrong).
    static func untyped(_ data: Data, keys: ListKeys, decoder: JSONDecoder) -> ListBody? {
        guard Item.self == JSONValue.self, JSONValue.parsesAsDecoder(decoder), let value = try? JSONValue(parsing: data) else {
            return nil
        }
        func member(_ name: String) -> JSONValue? {
            value[name] ?? AnyCodingKey.camelCased(name).flatMap { value[$0] }
        }
        let list = keys.itemsKey == nil ? value : keys.itemsKey.flatMap(member)
        guard case .array(let elements)? = list, let items = elements as? [Item] else {
            return nil
        }
        var meta: [String: JSONValue] = [:]
        for name in keys.metaKeys {
            if let found = member(name), found != .null { meta[name] = found }
        }
        return ListBody(items: items, meta: meta)
    }

    init(from decoder: any Decoder) throws {
        guard let keys = decoder.userInfo[.outpostListKeys] as? ListKeys else {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "No list keys were configured."))
        }
        guard let itemsKey = keys.itemsKey else {
            items = try decoder.singleValueContainer().decode([Item].self)
            meta = [:]
            return
        }
        let container = try decoder.container(keyedBy: AnyCodingKey.self)
        items = try container.decode([Item].self, forKey: container.resolve(itemsKey))
        var meta: [String: JSONValue] = [:]
        for name in keys.metaKeys {
            if let value = try container.decodeIfPresent(JSONValue.self, forKey: container.resolve(name)), value != .null {
                meta[name] = value
            }
        }
        self.meta = meta
    }
}
