import Hummingbird
import Logging
import NIOCore
import Prometheus

/// The listener of ``ObservabilityConfiguration/metricsPort``: `GET /metrics` answers the
/// registry's Prometheus text (format 0.0.4); every other path is 404. It takes no sign-in, so an
/// operator binds it where only the scraper reaches (``ObservabilityConfiguration/metricsHost``).
enum MetricsListener {
    static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    static func application(
        registry: PrometheusCollectorRegistry, host: String, port: Int, logger: Logger,
        onRunning: @escaping @Sendable (_ host: String, _ port: Int) async -> Void
    ) -> some ApplicationProtocol {
        let router = Router()
        router.get("/metrics") { _, _ in
            Response(
                status: .ok, headers: [.contentType: contentType, .cacheControl: "no-store"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: registry.emitToBuffer())))
        }
        return Application(
            router: router,
            configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: "Outpost"),
            onServerRunning: { channel in
                await onRunning(channel.localAddress?.ipAddress ?? host, channel.localAddress?.port ?? port)
            },
            logger: logger)
    }
}
