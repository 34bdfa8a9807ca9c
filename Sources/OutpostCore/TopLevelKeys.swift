import Foundation

/// Finds the keys of a JSON object's top level with one pass over the bytes, without building
/// anything: so that a 2xx body is parsed a second time only when it really carries an error key.
enum TopLevelKeys {
    /// Whether the body is a JSON object with one of `keys` at its top level.
    static func contains(anyOf keys: [String], in body: Data) -> Bool {
        guard !keys.isEmpty else { return false }
        let wanted = keys.map { Array($0.utf8) }
        return body.withUnsafeBytes { raw -> Bool in
            let bytes = raw.bindMemory(to: UInt8.self)
            var index = 0
            let count = bytes.count
            while index < count, bytes[index].isWhitespaceByte { index += 1 }
            guard index < count, bytes[index] == UInt8(ascii: "{") else { return false }
            var depth = 0
            while index < count {
                let byte = bytes[index]
                switch byte {
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    depth += 1
                    index += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    index += 1
                case UInt8(ascii: "\""):
                    let start = index + 1
                    index = start
                    while index < count, bytes[index] != UInt8(ascii: "\"") {
                        index += bytes[index] == UInt8(ascii: "\\") ? 2 : 1
                    }
                    let end = min(index, count)
                    index += 1
                    guard depth == 1 else { continue }
                    // A string at depth 1 is a key when a colon follows.
                    var look = index
                    while look < count, bytes[look].isWhitespaceByte { look += 1 }
                    guard look < count, bytes[look] == UInt8(ascii: ":") else { continue }
                    let length = end - start
                    for key in wanted where key.count == length {
                        var same = true
                        for offset in 0..<length where bytes[start + offset] != key[offset] {
                            same = false
                            break
                        }
                        if same { return true }
                    }
                default:
                    index += 1
                }
            }
            return false
        }
    }
}
