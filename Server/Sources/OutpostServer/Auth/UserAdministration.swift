/// What the console and `outpost users` take from an administrator, parsed and checked the same way.
extension QuotaBound {
    /// `default`, `none` (or `unlimited`), or a number with an optional k, m or g suffix
    /// (1024-based); `nil` for anything else.
    package init?(parsing text: String) {
        let lowered = text.lowercased()
        switch lowered {
        case "default":
            self = .standard
            return
        case "none", "unlimited":
            self = .unlimited
            return
        default: break
        }
        let scales: [Character: Int64] = ["k": 1 << 10, "m": 1 << 20, "g": 1 << 30]
        var digits = Substring(lowered)
        var scale: Int64 = 1
        if let last = digits.last, let found = scales[last] {
            scale = found
            digits = digits.dropLast()
        }
        guard digits.count <= 18, digits.allSatisfy(\.isASCII), let value = Int64(digits), value >= 0,
            value <= Int64.max / scale
        else { return nil }
        self = .limit(value * scale)
    }

    /// What ``init(parsing:)`` takes, for an error message.
    package static let parsingHelp = "a number (sizes may end in k, m or g), default or none"

    /// The bound as ``init(parsing:)`` reads it back: `default`, `none` or the number.
    package var text: String {
        switch self {
        case .standard: "default"
        case .unlimited: "none"
        case .limit(let value): "\(value)"
        }
    }
}

/// Names of roles (`caller.roles` in access rules).
package enum RoleName {
    package static let help = "A role is 1–64 letters, digits, '_', '-', '.' or ':', e.g. editor"

    package static func isValid(_ role: String) -> Bool {
        (1...64).contains(role.utf8.count)
            && role.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || [0x5F, 0x2D, 0x2E, 0x3A].contains(byte)
            }
    }
}
