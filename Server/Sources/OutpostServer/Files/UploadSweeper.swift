import Logging
import ServiceLifecycle

/// Removes expired pending uploads (``FileStorage/sweepUploads()``) every ``interval`` while the
/// server runs; stops with the server. On PostgreSQL every instance sweeps, and a sweep skips the
/// uploads another one is removing or a request is writing to.
struct UploadSweeper: Service {
    let files: any FileStorage
    let interval: Duration
    let logger: Logger

    /// A tenth of the upload lifetime, at least a second and at most 10 minutes: an abandoned
    /// upload's bytes are gone at most this long after it expired.
    static func interval(lifetime: Duration) -> Duration {
        min(max(lifetime / 10, .seconds(1)), .seconds(600))
    }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    try await Task.sleep(for: interval)
                } catch {
                    return
                }
                await sweep()
            }
        }
    }

    /// One sweep; a failure is logged, and the next sweep tries again.
    func sweep() async {
        do {
            let removed = try await files.sweepUploads()
            if removed > 0 { logger.info("expired uploads removed", metadata: ["uploads": "\(removed)"]) }
        } catch {
            logger.warning("removing expired uploads failed", metadata: ["error": "\(error)"])
        }
    }
}
