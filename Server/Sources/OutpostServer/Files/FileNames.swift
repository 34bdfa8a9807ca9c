import Crypto
import Foundation
@_spi(OutpostInternal) import OutpostSupport

/// The rules for names in `/files/{name}` and upload ids, checked before anything touches storage.
enum FileNames {
    /// The longest file name, in bytes.
    static let maxNameBytes = 128
    /// Upload ids are 16–64 of the same characters as names, minus `.`.
    static let uploadIDBytes = 16...64

    /// 1–128 of `A–Z a–z 0–9 . _ -`, not starting with `.` (so never `.` or `..`): no path
    /// separators, no control characters, no percent-encoding, nothing a file system or a shell
    /// treats specially. Linear in the input, and stops at the first bad byte.
    static func isValidName(_ name: String) -> Bool {
        let bytes = name.utf8
        guard (1...maxNameBytes).contains(bytes.count), bytes.first != UInt8(ascii: ".") else { return false }
        return bytes.allSatisfy { isNameByte($0) }
    }

    static func isValidUploadID(_ id: String) -> Bool {
        let bytes = id.utf8
        return uploadIDBytes.contains(bytes.count) && bytes.allSatisfy { isNameByte($0) && $0 != UInt8(ascii: ".") }
    }

    static func isNameByte(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
            || byte == 0x2E || byte == 0x5F || byte == 0x2D
    }

    /// A media type as stored: at most 255 bytes of visible ASCII and spaces; anything else is refused.
    static func isValidContentType(_ value: String) -> Bool {
        let bytes = value.utf8
        return (1...255).contains(bytes.count) && bytes.allSatisfy { $0 >= 0x20 && $0 < 0x7F } && value.contains("/")
    }

    static let nameRule =
        "A file name is 1–\(maxNameBytes) letters, digits, '.', '_' or '-', not starting with '.', e.g. /files/report-2024.pdf"
    static let uploadIDRule =
        "An upload id is 16–64 letters, digits, '_' or '-', chosen by the client, e.g. a random UUID without dashes"

    /// Lowercase hex SHA-256 of `text`.
    static func digest(_ text: String) -> String {
        SHA256.hash(data: Data(text.utf8)).hexString
    }
}

extension Digest {
    /// Lowercase hex (``Hex``).
    var hexString: String { Hex.string(self) }
}
