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
