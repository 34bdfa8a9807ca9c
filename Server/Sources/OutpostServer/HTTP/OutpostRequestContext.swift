import HTTPTypes
public import Hummingbird
public import NIOCore

/// The request context of every Outpost route: Hummingbird's core context, the client's address,
/// which sign-in rate limiting keys on and the access log writes, and who is calling, which the
/// authentication middleware sets before the route runs.
public struct OutpostRequestContext: RequestContext, RemoteAddressRequestContext, ClientAddressContext {
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
        self.clientAddress = source.channel.remoteAddress?.ipAddress ?? "unknown"
    }

    /// The client's IP address as text: the socket peer's, or, behind a trusted proxy, the address
    /// the proxy names (``ClientAddressMiddleware``); `unknown` when the socket has none.
    var clientAddress: String
}

/// A request context that knows the client's address (the access log writes it).
protocol ClientAddressContext: RequestContext {
    var clientAddress: String { get }
}

/// Sets ``OutpostRequestContext/clientAddress`` from the header a trusted proxy writes, when the
/// socket's peer is one (``ServerConfiguration/trustedProxies``). The router's first middleware, so
/// the access log and every limiter see the same address.
struct ClientAddressMiddleware: RouterMiddleware {
    typealias Context = OutpostRequestContext
    let proxies: TrustedProxies
    let header: HTTPField.Name

    init(proxies: TrustedProxies) {
        self.proxies = proxies
        self.header = HTTPField.Name(proxies.header.rawValue)!
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        var context = context
        context.clientAddress = proxies.clientAddress(
            peer: context.clientAddress, values: request.headers[values: header].map { $0[...] })
        return try await next(request, context)
    }
}
