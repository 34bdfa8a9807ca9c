public import Hummingbird
public import NIOCore

/// The request context of every Outpost route: Hummingbird's core context, the peer's address,
/// which sign-in rate limiting keys on, and who is calling, which the authentication middleware
/// sets before the route runs.
public struct OutpostRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?
    /// The connection the request came on (a file download reads how much it holds unsent).
    let channel: any Channel
    /// What the authentication middleware found; routes read `caller`.
    var authentication = Authentication.unchecked

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.remoteAddress = source.channel.remoteAddress
        self.channel = source.channel
    }

    /// The peer's IP address as text, or `unknown`.
    var clientAddress: String { remoteAddress?.ipAddress ?? "unknown" }
}
