/// The one error type of the Outpost client.
///
/// An `OutpostError` says what went wrong and what to do about it, and carries what a person
/// needs to act: the request's method and path, the HTTP status, and the server's own error code,
/// message and details when the body had them. Compare errors by ``code``; the set of codes is open,
/// so switch over them with a `default` case. Its fields are read-only: the client fills them in.
public struct OutpostError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is. New codes may be added in any release.
    ///
    /// Every code of the client modules is declared here, in this one list (``all``), OutpostAuth's
    /// and the entity store's included.
    public struct Code: Hashable, Sendable, RawRepresentable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// No connection could be made: the server is down, the host is wrong, or the network is off.
        public static let cannotConnect = Code(rawValue: "cannotConnect")
        /// The request took longer than the configured timeout.
        public static let timeout = Code(rawValue: "timeout")
        /// The task performing the request was cancelled.
        public static let cancelled = Code(rawValue: "cancelled")
        /// The server answered with a status outside 200–299.
        public static let httpStatus = Code(rawValue: "httpStatus")
        /// The server answered 2xx but the body carried an error object (NationBuilder style).
        public static let serviceError = Code(rawValue: "serviceError")
        /// The body was not the JSON that was promised.
        public static let malformedResponse = Code(rawValue: "malformedResponse")
        /// A lambda reply had no `result` key.
        public static let malformedResult = Code(rawValue: "malformedResult")
        /// The JSON was well formed but did not fit the expected type.
        public static let decodingFailed = Code(rawValue: "decodingFailed")
        /// The request body could not be encoded.
        public static let encodingFailed = Code(rawValue: "encodingFailed")
        /// The request could not be built (bad path, bad URL, bad argument).
        public static let invalidRequest = Code(rawValue: "invalidRequest")
        /// The response body was larger than `Configuration.maxResponseBytes`.
        public static let responseTooLarge = Code(rawValue: "responseTooLarge")
        /// A middleware took over the handling of this response or error; nothing else is to be done.
        public static let halted = Code(rawValue: "halted")
        /// A conditional request lost a race: the resource changed since it was read (HTTP 412).
        public static let conflict = Code(rawValue: "conflict")
        /// The credentials were missing, expired or refused (HTTP 401).
        public static let unauthorized = Code(rawValue: "unauthorized")
        /// The connection broke after the request was sent, e.g. the server died mid-request.
        public static let connectionLost = Code(rawValue: "connectionLost")
        /// A middleware threw an error of its own (not an ``OutpostError``); ``OutpostError/underlying`` holds it.
        public static let middlewareFailed = Code(rawValue: "middlewareFailed")
        /// The transport threw an error of its own (not an ``OutpostError``); ``OutpostError/underlying`` holds it.
        public static let transportFailed = Code(rawValue: "transportFailed")
        /// An operation's request builder or response handler threw an error of its own.
        public static let handlerFailed = Code(rawValue: "handlerFailed")
        /// The operation needs an entity's identifier and the entity has none: push it first.
        public static let missingIdentity = Code(rawValue: "missingIdentity")
        /// OutpostAuth's `AuthMiddleware` would not send the access token where the request was going:
        /// another origin than the base URL's and the trusted ones, or plain `http` to a host off the loopback.
        public static let untrustedDestination = Code(rawValue: "untrustedDestination")
        /// The outbox journal cannot take this write: it would grow past
        /// ``Outbox/Configuration/maxBytes``. Replay (or drop) queued writes first, or raise the bound.
        public static let outboxFull = Code(rawValue: "outboxFull")
        /// The outbox journal could not be opened, read or written (permissions, disk space, or another
        /// process holding it).
        public static let outboxUnavailable = Code(rawValue: "outboxUnavailable")
        /// No write with this id is waiting in the outbox, or it is being sent right now.
        public static let outboxEntryNotFound = Code(rawValue: "outboxEntryNotFound")
        /// The folder for the client's files could not be found: an App Group container the app is
        /// not entitled to (`com.apple.security.application-groups`), or an App Group off Apple platforms.
        public static let folderUnavailable = Code(rawValue: "folderUnavailable")

        /// Every code above, in the order they are declared: the list the documentation follows.
        public static let all: [Code] = [
            .cannotConnect, .timeout, .cancelled, .httpStatus, .serviceError, .malformedResponse, .malformedResult,
            .decodingFailed, .encodingFailed, .invalidRequest, .responseTooLarge, .halted, .conflict, .unauthorized,
            .connectionLost, .middlewareFailed, .transportFailed, .handlerFailed, .missingIdentity,
            .untrustedDestination, .outboxFull, .outboxUnavailable, .outboxEntryNotFound, .folderUnavailable,
        ]
    }

    /// What kind of failure this is: compare it with the codes of ``Code/all``.
    public internal(set) var code: Code
    /// What went wrong, in a sentence.
    public internal(set) var message: String
    /// What to do about it, when there is something to do.
    public internal(set) var suggestion: String?
    /// The HTTP status code, when a response was received.
    public internal(set) var status: Int?
    /// The server's own error code (`{"error": {"code": ...}}`), when the body had one.
    public internal(set) var serverCode: String?
    /// The server's own message, when the body had one.
    public internal(set) var serverMessage: String?
    /// The server's `details`, when the body had them.
    public internal(set) var details: JSONValue?
    /// Validation errors by field, when the body had them: `["title": ["This field may not be blank."]]`.
    /// Nested fields are dotted (`address.city`), list items indexed (`items[2].name`); errors about the
    /// whole object keep the server's key (Django REST framework's `non_field_errors`).
    public internal(set) var fieldErrors: [String: [String]] = [:]
    /// The request's method, e.g. `POST`.
    public internal(set) var method: String?
    /// The request's path, without its query (which may hold secrets).
    public internal(set) var path: String?
    /// For ``Code/decodingFailed``: where in the JSON the mismatch was, e.g. `results[3].author.name`.
    public internal(set) var codingPath: String?
    /// The error that caused this one, if any.
    public internal(set) var underlying: (any Error)?

    public init(
        _ code: Code,
        _ message: String,
        suggestion: String? = nil,
        status: Int? = nil,
        serverCode: String? = nil,
        serverMessage: String? = nil,
        details: JSONValue? = nil,
        method: String? = nil,
        path: String? = nil,
        codingPath: String? = nil,
        underlying: (any Error)? = nil
    ) {
        self.code = code
        self.message = message
        self.suggestion = suggestion
        self.status = status
        self.serverCode = serverCode
        self.serverMessage = serverMessage
        self.details = details
        self.method = method
        self.path = path.map(Self.normalizedPath)
        self.codingPath = codingPath
        self.underlying = underlying
    }

    public var description: String {
        var text = ""
        if let method, let path { text += "\(method) \(Self.normalizedPath(path)): " }
        text += message
        if let status, !message.contains("\(status)") { text += " (HTTP \(status))" }
        if serverCode != nil || serverMessage != nil {
            text += " — server said"
            if let serverCode { text += " [\(serverCode)]" }
            if let serverMessage { text += " \(serverMessage)" }
        }
        if !fieldErrors.isEmpty { text += " — " + Self.describe(fieldErrors: fieldErrors) }
        if let codingPath { text += " at \(codingPath)" }
        if let suggestion { text = Self.endingSentence(text) + " " + suggestion }
        return text
    }

    /// `non_field_errors` first and without a name, then each field: `title: This field may not be blank.`
    static func describe(fieldErrors: [String: [String]]) -> String {
        let general = ["non_field_errors", "__all__"]
        var parts: [String] = []
        for key in general {
            if let messages = fieldErrors[key] { parts.append(messages.joined(separator: " ")) }
        }
        for (key, messages) in fieldErrors.sorted(by: { $0.key < $1.key }) where !general.contains(key) {
            parts.append("\(key): \(messages.joined(separator: " "))")
        }
        return parts.joined(separator: "; ")
    }

    /// `text` ending in exactly one sentence mark, so that another sentence can follow.
    static func endingSentence(_ text: String) -> String {
        var trimmed = Substring(text)
        while let last = trimmed.last, last.isWhitespace { trimmed = trimmed.dropLast() }
        guard let last = trimmed.last else { return "" }
        return ".!?".contains(last) ? String(trimmed) : trimmed + "."
    }

    /// A request path for errors: always with its leading slash, never with its query (which may
    /// hold secrets); for an absolute URL, the URL's path.
    @_spi(OutpostInternal) public static func normalizedPath(_ path: String) -> String {
        var text = Substring(path)
        if let end = text.firstIndex(where: { $0 == "?" || $0 == "#" }) { text = text[..<end] }
        if let scheme = text.range(of: "://") {
            let afterScheme = text[scheme.upperBound...]
            text = afterScheme.firstIndex(of: "/").map { afterScheme[$0...] } ?? "/"
        }
        return text.hasPrefix("/") ? String(text) : "/" + text
    }

    /// Thrown by a middleware that has taken over a response or an error (for example, a 401 that
    /// signs the user out): the caller learns that nothing is left to do.
    public static func halted(_ reason: String) -> OutpostError {
        OutpostError(.halted, "A middleware handled this request: \(reason)")
    }
}

extension OutpostError {
    /// Fills in the request's method and path where they are not yet known.
    @_spi(OutpostInternal) public func attributed(method: String, path: String) -> OutpostError {
        var copy = self
        if copy.method == nil { copy.method = method }
        if copy.path == nil { copy.path = Self.normalizedPath(path) }
        return copy
    }

    /// Turns any error into an `OutpostError`, keeping an `OutpostError` as it is.
    @_spi(OutpostInternal) public static func wrap(_ error: any Error, method: String, path: String) -> OutpostError {
        if let error = error as? OutpostError { return error.attributed(method: method, path: path) }
        if error is CancellationError {
            return OutpostError(.cancelled, "The request was cancelled", method: method, path: path, underlying: error)
        }
        // Not a network failure: the layers wrap their own errors (wrap(_:layer:method:path:)), so
        // an error that gets here came from the caller's code.
        return OutpostError(
            .handlerFailed, "The request failed: \(error)", suggestion: "See the underlying error", method: method,
            path: path, underlying: error)
    }

    /// A readable coding path such as `results[3].author`.
    @_spi(OutpostInternal) public static func describe(codingPath: [any CodingKey]) -> String {
        var text = ""
        for key in codingPath {
            if let index = key.intValue {
                text += "[\(index)]"
            } else {
                if !text.isEmpty { text += "." }
                text += key.stringValue
            }
        }
        return text.isEmpty ? "(top level)" : text
    }

    /// Builds a decoding failure from a `DecodingError`, keeping the coding path.
    @_spi(OutpostInternal) public static func decoding(_ error: any Error, type: Any.Type) -> OutpostError {
        var codingPath: String?
        var reason = "\(error)"
        if let error = error as? DecodingError {
            switch error {
            case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
                codingPath = describe(codingPath: context.codingPath)
                reason = context.debugDescription
            case .keyNotFound(let key, let context):
                codingPath = describe(codingPath: context.codingPath + [key])
                reason = "The key '\(key.stringValue)' is missing"
            @unknown default:
                break
            }
        }
        return OutpostError(
            .decodingFailed, "The response could not be decoded as \(type): \(reason)",
            suggestion: "Check that the model matches what the server sends", codingPath: codingPath,
            underlying: error)
    }
}
