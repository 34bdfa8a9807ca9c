/// The one error type of OutpostAuth. Compare by ``code``; the set of codes is open.
public struct AuthError: Error, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, RawRepresentable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// A PKCE verifier outside RFC 7636's rules.
        public static let invalidVerifier = Code(rawValue: "invalidVerifier")
        /// A credential store could not read or write.
        public static let storeFailed = Code(rawValue: "storeFailed")
    }

    public var code: Code
    /// What went wrong and what to do.
    public var message: String
    public var underlying: (any Error)?

    public init(_ code: Code, _ message: String, underlying: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    public var description: String { "\(code): \(message)" }
}
