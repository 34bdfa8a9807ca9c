@_spi(OutpostInternal) import OutpostCore

/// JSON text written by hand where the server answers often and the shape is fixed (list pages,
/// cursors), rather than through `JSONEncoder`, whose setup and key sorting cost more than the
/// few values being written.
enum JSONText {
    /// `text` as a JSON string literal, quotes included (RFC 8259 §7: `"`, `\` and control
    /// characters escaped; everything else, `/` included, as it is).
    static func quoted(_ text: String) -> String {
        // Most texts (links, cursors, names) need no escape: one byte scan, then one copy.
        if !text.utf8.contains(where: needsEscape) {
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
        default:
            // Numbers and containers exactly as a stored body writes them.
            var out: [UInt8] = []
            guard RecordBodyText.append(value, to: &out) else { return "null" }
            return String(decoding: out, as: UTF8.self)
        }
    }

    /// `{"key": value, ...}` in the given order (keys are written as they are given).
    static func object(_ members: [(key: String, value: JSONValue)]) -> String {
        var out: [UInt8] = [UInt8(ascii: "{")]
        appendMembers(members, to: &out)
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }

    /// `"key":value,...` (no braces), in the given order, appended to `out`.
    static func appendMembers(_ members: [(key: String, value: JSONValue)], to out: inout [UInt8]) {
        for (offset, member) in members.enumerated() {
            if offset > 0 { out.append(UInt8(ascii: ",")) }
            appendQuoted(member.key, to: &out)
            out.append(UInt8(ascii: ":"))
            append(member.value, to: &out)
        }
    }

    /// ``value(_:)`` appended to `out`.
    static func append(_ value: JSONValue, to out: inout [UInt8]) {
        switch value {
        case .null: out.append(contentsOf: "null".utf8)
        case .string(let text): appendQuoted(text, to: &out)
        default: out.append(contentsOf: Self.value(value).utf8)
        }
    }

    /// ``quoted(_:)`` appended to `out`, without an intermediate string when nothing needs escaping.
    static func appendQuoted(_ text: String, to out: inout [UInt8]) {
        guard text.utf8.contains(where: needsEscape) else {
            out.append(UInt8(ascii: "\""))
            out.append(contentsOf: text.utf8)
            out.append(UInt8(ascii: "\""))
            return
        }
        out.append(contentsOf: quoted(text).utf8)
    }

    static func needsEscape(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
    }
}
