import OutpostCore

/// JSON text written by hand where the server answers often and the shape is fixed (list pages,
/// cursors), rather than through `JSONEncoder`, whose setup and key sorting cost more than the
/// few values being written.
enum JSONText {
    /// `text` as a JSON string literal, quotes included (RFC 8259 §7: `"`, `\` and control
    /// characters escaped; everything else, `/` included, as it is).
    static func quoted(_ text: String) -> String {
        // Most texts (links, cursors, names) need no escape: one byte scan, then one copy.
        if !text.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            return "\"" + text + "\""
        }
        var out = "\""
        out.reserveCapacity(text.utf8.count + 2)
        var plainStart = text.unicodeScalars.startIndex
        var index = plainStart
        let scalars = text.unicodeScalars
        while index != scalars.endIndex {
            let scalar = scalars[index]
            let escape: String?
            switch scalar {
            case "\"": escape = "\\\""
            case "\\": escape = "\\\\"
            case "\n": escape = "\\n"
            case "\r": escape = "\\r"
            case "\t": escape = "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                escape = "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: escape = nil
            }
            if let escape {
                out.unicodeScalars += scalars[plainStart..<index]
                out += escape
                plainStart = scalars.index(after: index)
            }
            index = scalars.index(after: index)
        }
        out.unicodeScalars += scalars[plainStart..<scalars.endIndex]
        out += "\""
        return out
    }

    /// A scalar or `null` as JSON text; arrays and objects through their own encoding.
    static func value(_ value: JSONValue) -> String {
        switch value {
        case .null: return "null"
        case .bool(let flag): return flag ? "true" : "false"
        case .int(let number): return String(number)
        case .string(let text): return quoted(text)
        default: return value.jsonString()
        }
    }

    /// `{"key": value, ...}` in the given order (keys are written as they are given).
    static func object(_ members: [(key: String, value: JSONValue)]) -> String {
        var out = "{"
        for (offset, member) in members.enumerated() {
            if offset > 0 { out += "," }
            out += quoted(member.key)
            out += ":"
            out += value(member.value)
        }
        out += "}"
        return out
    }
}
