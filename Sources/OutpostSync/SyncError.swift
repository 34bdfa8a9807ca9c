/// A request the store refuses, or a local database the store cannot use; the message says what to do.
public struct SyncError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong and what to do.
    public var message: String

    /// An error with `message`.
    ///
    /// - Parameter message: what went wrong and what to do.
    public init(_ message: String) { self.message = message }

    /// The message.
    public var description: String { message }
}
