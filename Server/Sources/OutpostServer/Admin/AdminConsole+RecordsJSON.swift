@_spi(OutpostInternal) import OutpostCore

extension AdminConsole {
    /// A record's fields as indented JSON text for a person to read and edit: keys in the order
    /// stored bodies keep them, two spaces a level, and every number written exactly as it is
    /// stored (``RecordBodyText``), so saving the text unchanged writes the same fields back.
    /// Nesting is bounded by the parser that made the value.
    static func prettyJSON(_ value: JSONValue) -> String {
        var out: [UInt8] = []
        appendPretty(value, level: 0, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    private static func appendPretty(_ value: JSONValue, level: Int, to out: inout [UInt8]) {
        func newline(_ level: Int) {
            out.append(UInt8(ascii: "\n"))
            out.append(contentsOf: repeatElement(UInt8(ascii: " "), count: 2 * level))
        }
        switch value {
        case .array(let items) where !items.isEmpty:
            out.append(UInt8(ascii: "["))
            for (offset, item) in items.enumerated() {
                if offset > 0 { out.append(UInt8(ascii: ",")) }
                newline(level + 1)
                appendPretty(item, level: level + 1, to: &out)
            }
            newline(level)
            out.append(UInt8(ascii: "]"))
        case .object(let members) where !members.isEmpty:
            out.append(UInt8(ascii: "{"))
            for (offset, key) in members.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }).enumerated() {
                if offset > 0 { out.append(UInt8(ascii: ",")) }
                newline(level + 1)
                RecordBodyText.appendString(key, to: &out)
                out.append(contentsOf: ": ".utf8)
                appendPretty(members[key]!, level: level + 1, to: &out)
            }
            newline(level)
            out.append(UInt8(ascii: "}"))
        default:
            var scalar: [UInt8] = []
            if RecordBodyText.append(value, to: &scalar) {
                out.append(contentsOf: scalar)
            } else {
                out.append(contentsOf: "null".utf8)
            }
        }
    }
}
