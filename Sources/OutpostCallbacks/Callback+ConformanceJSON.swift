extension Callback {
    /// This callback as the one-line JSON object of `outpost callbacks parse`:
    /// `{"action", "source", "x-success", "x-error", "x-cancel", "parameters"}` in that order,
    /// absent values as `null`, parameters as an object of strings sorted by name.
    public var conformanceJSON: String {
        "{" + ConformanceJSON.fields(of: self) + "}"
    }
}

extension CallbackError {
    /// This error as the one-line JSON object of `outpost callbacks parse`:
    /// `{"error": CODE, "action", "source", "x-success", "x-error", "x-cancel", "parameters"}`
    /// with what could be parsed (`null`s, and empty parameters, when the scheme or host failed).
    public var conformanceJSON: String {
        "{\"error\":" + ConformanceJSON.string(code.name) + "," + ConformanceJSON.fields(of: callback) + "}"
    }
}

enum ConformanceJSON {
    static func fields(of callback: Callback?) -> String {
        let action = callback.flatMap { $0.action.isEmpty ? nil : $0.action }
        let parameters = (callback?.parameters ?? [:]).sorted { $0.key < $1.key }
            .map { string($0.key) + ":" + string($0.value) }
            .joined(separator: ",")
        return [
            "\"action\":" + optional(action),
            "\"source\":" + optional(callback?.source),
            "\"x-success\":" + optional(callback?.successURL),
            "\"x-error\":" + optional(callback?.errorURL),
            "\"x-cancel\":" + optional(callback?.cancelURL),
            "\"parameters\":{" + parameters + "}",
        ].joined(separator: ",")
    }

    static func optional(_ value: String?) -> String {
        value.map(string) ?? "null"
    }

    /// A JSON string literal: quotes, backslashes and control characters escaped, the rest as UTF-8.
    static func string(_ value: String) -> String {
        var out = "\""
        out.reserveCapacity(value.utf8.count + 2)
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16, uppercase: false)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}
