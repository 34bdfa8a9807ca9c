public import Hummingbird
public import NIOCore

/// The request context of every Outpost route: Hummingbird's core context plus the peer's address,
/// which sign-in rate limiting keys on.
public struct OutpostRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.remoteAddress = source.channel.remoteAddress
    }

    /// The peer's IP address as text, or `unknown`.
    var clientAddress: String { remoteAddress?.ipAddress ?? "unknown" }
}
