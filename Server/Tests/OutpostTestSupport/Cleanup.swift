/// Runs `body`, then `cleanup`, whether `body` threw or not: the servers, clients and folders a test
/// starts are stopped on every path (`defer` cannot await).
package func withCleanup<T>(_ body: () async throws -> T, cleanup: () async -> Void) async throws -> T {
    let result: T
    do {
        result = try await body()
    } catch {
        await cleanup()
        throw error
    }
    await cleanup()
    return result
}
