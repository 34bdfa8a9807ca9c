import Foundation

/// What an error body says, read the way an ``OutpostClient/ErrorFormat`` describes and, when that
/// finds nothing, in the common shapes.
struct ParsedError: Sendable {
    var code: String?
    var message: String?
    var details: JSONValue?
    var fieldErrors: [String: [String]] = [:]

    var isEmpty: Bool { code == nil && message == nil && details == nil && fieldErrors.isEmpty }

    init(code: String? = nil, message: String? = nil, details: JSONValue? = nil, fieldErrors: [String: [String]] = [:]) {
        self.code = code
        self.message = message
        self.details = details
        self.fieldErrors = fieldErrors
    }

    /// The body of an error response (non-2xx).
    init(errorBody response: ClientResponse, format: OutpostClient.ErrorFormat) {
        guard let json = try? response.json() else {
            self.init()
            return
        }
        let value = format.envelopeKey.flatMap { json[$0] } ?? json
        if case .string = value, json["error_description"] != nil {
            self = Self.commonShape(json)  // OAuth's {"error": "invalid_request", "error_description": ...}
            return
        }
        self.init(value, format: format)
        if case .object(let object) = value {
            switch format.fieldErrors {
            case .none:
                break
            case .key(let key):
                if case .object(let fields)? = object[key] ?? json[key] {
                    fieldErrors = Self.fieldMap(fields, excluding: [], strict: false)
                }
            case .topLevel:
                let excluded = Set([format.codeKey, format.detailsKey] + format.messageKeys)
                fieldErrors = Self.fieldMap(object, excluding: excluded, strict: false)
            }
        }
        if code == nil, message == nil {
            // Nothing where the format looks: an unambiguous common shape (an Outpost envelope, an
            // OAuth error, a `detail`) wins over a field map guessed from the top level.
            let common = Self.commonShape(json)
            if common.code != nil || common.message != nil || isEmpty { self = common }
        }
    }

    /// One error value: a message, an object with the format's keys, or an array of messages.
    init(_ value: JSONValue, format: OutpostClient.ErrorFormat) {
        switch value {
        case .string(let message):
            self.init(message: message)
        case .object(let object):
            let code = object[format.codeKey].flatMap { $0.stringValue ?? $0.intValue.map(String.init) }
            let message = format.messageKeys.lazy.compactMap { object[$0]?.stringValue }.first
            self.init(code: code, message: message, details: object[format.detailsKey])
        case .array(let items):
            let messages = items.compactMap { $0.stringValue ?? $0["message"]?.stringValue }
            self.init(message: messages.isEmpty ? nil : messages.joined(separator: "; "), details: value)
        default:
            self.init()
        }
    }

    /// The Outpost envelope, OAuth's `{"error", "error_description"}`, a top-level `detail` or `message`,
    /// or a field map whose every value is a message or a list of them.
    static func commonShape(_ json: JSONValue) -> ParsedError {
        guard case .object(let object) = json else {
            if case .array = json { return ParsedError(json, format: .outpost) }
            return ParsedError()
        }
        if case .object(let envelope)? = object["error"] {
            return ParsedError(
                code: envelope["code"]?.stringValue, message: envelope["message"]?.stringValue, details: envelope["details"])
        }
        if let error = object["error"]?.stringValue {
            return ParsedError(code: error, message: object["error_description"]?.stringValue)
        }
        for key in ["detail", "message", "error_description"] {
            if let message = object[key]?.stringValue {
                return ParsedError(code: object["code"]?.stringValue, message: message)
            }
        }
        return ParsedError(fieldErrors: fieldMap(object, excluding: [], strict: true))
    }

    /// The messages of a field map, by dotted path. With `strict`, a value that is not a message, a
    /// list of messages or a nested map makes the whole map no field map (empty).
    static func fieldMap(_ object: [String: JSONValue], excluding: Set<String>, strict: Bool) -> [String: [String]] {
        var map: [String: [String]] = [:]
        for (key, value) in object where !excluding.contains(key) {
            if !collect(value, path: key, into: &map), strict { return [:] }
        }
        return map
    }

    /// Adds the messages of `value` under `path`; `false` when it holds something else too.
    private static func collect(_ value: JSONValue, path: String, into map: inout [String: [String]]) -> Bool {
        switch value {
        case .string(let message):
            map[path, default: []].append(message)
            return true
        case .array(let items):
            var onlyMessages = true
            for (index, item) in items.enumerated() {
                switch item {
                case .string(let message):
                    map[path, default: []].append(message)
                case .object:
                    onlyMessages = collect(item, path: "\(path)[\(index)]", into: &map) && onlyMessages
                default:
                    onlyMessages = false
                }
            }
            return onlyMessages
        case .object(let object):
            var onlyMessages = true
            for (key, nested) in object {
                onlyMessages = collect(nested, path: "\(path).\(key)", into: &map) && onlyMessages
            }
            return onlyMessages
        default:
            return false
        }
    }

    /// What to do about a 4xx with this body.
    func suggestion(status: Int) -> String {
        if !fieldErrors.isEmpty { return "Correct the fields the server named and send the request again" }
        if message != nil || code != nil { return "The server refused the request; its message says what to change" }
        switch status {
        case 403: return "The credentials in use may not do this; check the account's permissions"
        case 404: return "Check the path and the identifier; the server has nothing there"
        case 405: return "The server does not allow this method on this path; check its API"
        case 415: return "The server does not accept the body's media type (Content-Type); check what it accepts"
        case 429: return "Too many requests; wait, then try again"
        default: return "The server refused the request; check it against the server's API documentation"
        }
    }
}
