import Foundation
import OutpostTestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The stock Django REST framework + django-oauth-toolkit backend of `Server/Tests/Interop/drf`, run by the
/// python that `OUTPOST_INTEROP_PYTHON` names (`bash .ci/python-venv.sh` prints one), on a port of
/// 127.0.0.1 the OS picks. Fresh SQLite database in a temporary directory for each start.
struct DjangoServer: Sendable {
    static var isEnabled: Bool { PythonHelper.python != nil }

    /// The server of the running suite (see ``DjangoServerTrait``).
    @TaskLocal static var current: DjangoServer?

    let baseURL: URL
    let username: String
    let password: String
    let secrets: [String: String]
    private let helper: PythonHelper

    /// Starts the server and waits, at most `timeout`, until it answers.
    static func start(timeout: Duration = .seconds(180)) async throws -> DjangoServer {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Interop/drf")
        let deadline = ContinuousClock.now + timeout
        // The first line on stdout: {"port": ..., "base_url": ..., "username": ..., ...}.
        let (helper, line) = try await PythonHelper.start(
            folder.appendingPathComponent("serve.py"), directory: folder, deadline: deadline)
        do {
            guard let ready = try JSONSerialization.jsonObject(with: line) as? [String: Any],
                let base = (ready["base_url"] as? String).flatMap(URL.init(string:)),
                let username = ready["username"] as? String, let password = ready["password"] as? String,
                let clients = ready["clients"] as? [String: [String: Any]]
            else { throw Failure("serve.py printed no readiness line") }
            let server = DjangoServer(
                baseURL: base, username: username, password: password,
                secrets: clients.compactMapValues { $0["secret"] as? String }, helper: helper)
            try await server.awaitReadiness(deadline: deadline)
            return server
        } catch {
            await helper.killNow()
            throw error
        }
    }

    /// Stops the server (SIGTERM, then SIGKILL after 10 s) and waits for it to exit.
    func stop() async { await helper.stop() }

    /// Polls the discovery document until it answers 200, or the deadline passes.
    private func awaitReadiness(deadline: ContinuousClock.Instant) async throws {
        let url = baseURL.appendingPathComponent(".well-known/oauth-authorization-server")
        let helper = helper
        let ready = try await eventually(within: deadline - .now, every: .milliseconds(100)) {
            if helper.hasExited { throw Failure("the Django server exited before it was ready") }
            var request = URLRequest(url: url)
            request.timeoutInterval = 5
            guard let (_, response) = try? await URLSession.shared.data(for: request) else { return false }
            return (response as? HTTPURLResponse)?.statusCode == 200
        }
        guard ready else { throw Failure("the Django server did not answer before the deadline") }
    }

    typealias Failure = PythonHelper.Failure
}

/// Starts one Django server for a suite, hands it to the tests in ``DjangoServer/current``, and stops
/// it when the suite ends, passed or failed.
struct DjangoServerTrait: SuiteTrait, TestScoping {
    var isRecursive: Bool { false }

    func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        guard DjangoServer.isEnabled else { return try await function() }  // the suite is skipped
        let server = try await DjangoServer.start()
        do {
            try await DjangoServer.$current.withValue(server) { try await function() }
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }
}
