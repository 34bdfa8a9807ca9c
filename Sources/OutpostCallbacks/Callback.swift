public import Foundation

/// An x-callback-url request that another app sent to this one, parsed.
///
/// `scheme://x-callback-url/action?x-source=App&x-success=...&x-error=...&x-cancel=...&name=value`
///
/// Answer it with ``succeed(additionalParameters:)-5383j``, ``fail(code:message:)`` or
/// ``cancel()``: each opens the matching callback URL through the URL opener of the router that
/// routed it. The parsing rules are in <doc:RoutingAnsweringCalling>.
public struct Callback: Sendable, Hashable, CustomStringConvertible {
    /// The URL exactly as it was routed.
    public let url: String
    /// The URL's scheme, lower-cased.
    public let scheme: String
    /// The percent-decoded path without its leading `/` and one trailing `/`; may contain `/`.
    /// Empty only in the ``CallbackError/callback`` of a ``CallbackError/Code/missingAction`` error.
    public let action: String
    /// `x-source`: the name of the calling app, or `nil` when absent or empty.
    public let source: String?
    /// `x-success`: where to answer a success, or `nil` when absent or empty.
    public let successURL: String?
    /// `x-error`: where to answer a failure, or `nil` when absent or empty.
    public let errorURL: String?
    /// `x-cancel`: where to answer a cancellation, or `nil` when absent or empty.
    public let cancelURL: String?
    /// Every other query parameter whose name does not start with `x-`; the last duplicate wins.
    public let parameters: [String: String]

    /// Opens the callback URLs when answering. Not part of equality.
    let opener: any URLOpening

    init(
        url: String, scheme: String, action: String, source: String?, successURL: String?,
        errorURL: String?, cancelURL: String?, parameters: [String: String], opener: any URLOpening
    ) {
        self.url = url
        self.scheme = scheme
        self.action = action
        self.source = source
        self.successURL = successURL
        self.errorURL = errorURL
        self.cancelURL = cancelURL
        self.parameters = parameters
        self.opener = opener
    }

    /// Parses an x-callback-url without a router: any well-formed scheme is accepted.
    ///
    /// - Parameters:
    ///   - url: The URL as text; text that Foundation's `URL` refuses is parsed too.
    ///   - opener: Opens the callback URLs when this callback is answered.
    /// - Throws: ``CallbackError`` with code ``CallbackError/Code/unknownScheme`` (no scheme),
    ///   ``CallbackError/Code/invalidHost`` or ``CallbackError/Code/missingAction``.
    public init(parsing url: String, opener: any URLOpening) throws(CallbackError) {
        let callback = try CallbackParser.parse(url, opener: opener, resolveScheme: CallbackParser.lowercasedScheme)
        if callback.action.isEmpty {
            throw CallbackError(code: .missingAction, url: url, callback: callback)
        }
        self = callback
    }

    /// Parses an x-callback-url given as a `URL`; see ``init(parsing:opener:)-(String,_)``.
    public init(parsing url: URL, opener: any URLOpening) throws(CallbackError) {
        try self.init(parsing: url.absoluteString, opener: opener)
    }

    /// Parses an x-callback-url whose callback URLs ``SystemURLOpener`` opens; see
    /// ``init(parsing:opener:)-(String,_)``. Unavailable in app extensions, which pass an opener.
    @available(iOSApplicationExtension, unavailable)
    @available(macCatalystApplicationExtension, unavailable)
    @available(tvOSApplicationExtension, unavailable)
    @available(visionOSApplicationExtension, unavailable)
    public init(parsing url: String) throws(CallbackError) {
        try self.init(parsing: url, opener: SystemURLOpener())
    }

    /// Parses an x-callback-url given as a `URL`, whose callback URLs ``SystemURLOpener`` opens;
    /// see ``init(parsing:opener:)-(String,_)``. Unavailable in app extensions, which pass an opener.
    @available(iOSApplicationExtension, unavailable)
    @available(macCatalystApplicationExtension, unavailable)
    @available(tvOSApplicationExtension, unavailable)
    @available(visionOSApplicationExtension, unavailable)
    public init(parsing url: URL) throws(CallbackError) {
        try self.init(parsing: url.absoluteString, opener: SystemURLOpener())
    }

    public static func == (lhs: Callback, rhs: Callback) -> Bool {
        lhs.url == rhs.url && lhs.scheme == rhs.scheme && lhs.action == rhs.action
            && lhs.source == rhs.source && lhs.successURL == rhs.successURL
            && lhs.errorURL == rhs.errorURL && lhs.cancelURL == rhs.cancelURL
            && lhs.parameters == rhs.parameters
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(url)
        hasher.combine(action)
        hasher.combine(parameters)
    }

    public var description: String {
        "Callback(action: \(action), source: \(source ?? "nil"), parameters: \(parameters.sorted { $0.key < $1.key }))"
    }
}
