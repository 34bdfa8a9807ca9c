public import Foundation
public import HTTPTypes
@_spi(OutpostInternal) import OutpostSupport
import Synchronization

/// A ``BackgroundTransferSession`` that runs its tasks in this process, through a
/// ``ClientTransport``'s streaming path: for tests, and for programs on platforms without
/// background `URLSession`s (Linux), where a transfer lasts as long as the process.
///
/// It behaves as the system does for a background session: the request is sent as it is, a
/// download's body lands in a file the event hands over, and events wait for the session's next
/// reader. With `holdingTasks`, tasks wait for ``startHeldTasks()``, so a test can start a
/// transfer with one ``BackgroundFiles`` and finish it with another, as after a relaunch.
public final class TransportTransferSession: BackgroundTransferSession {
    public let identifier: String
    public let transport: any ClientTransport
    /// Where download bodies are written before the events hand them over.
    public let folder: URL
    private let options: TransportOptions
    private let channel = BackgroundEventChannel()
    private let held = Mutex<[@Sendable () async -> Void]?>(nil)

    /// - Parameters:
    ///   - transport: sends the requests; the session does not shut it down.
    ///   - identifier: the session's name, as a background `URLSession`'s identifier.
    ///   - folder: where download bodies are written; default: a new folder in the temporary
    ///     directory.
    ///   - holdingTasks: keep started tasks until ``startHeldTasks()``.
    ///   - timeout: the longest one task may take.
    public init(
        transport: any ClientTransport, identifier: String = "outpost.transfers", folder: URL? = nil,
        holdingTasks: Bool = false, timeout: Duration = .seconds(3600)
    ) {
        self.transport = transport
        self.identifier = identifier
        self.folder =
            folder ?? FileManager.default.temporaryDirectory.appendingPathComponent("outpost-transfers-\(UUID().uuidString)")
        self.options = TransportOptions(timeout: timeout)
        if holdingTasks { held.withLock { $0 = [] } }
    }

    public func startUpload(_ request: HTTPRequest, fromFile file: URL, taskDescription: String) throws {
        run { await self.upload(request, file: file, description: taskDescription) }
    }

    public func startDownload(_ request: HTTPRequest, taskDescription: String) throws {
        run { await self.download(request, description: taskDescription) }
    }

    public func events() -> AsyncStream<BackgroundTransferEvent> { channel.events() }

    /// Runs the tasks held so far, and from now on every task at once. When the held tasks have
    /// ended, sends ``BackgroundTransferEvent/eventsDelivered``, as the system does after waking
    /// the app for a session's events.
    public func startHeldTasks() {
        guard
            let tasks = held.withLock({ held in
                defer { held = nil }; return held
            })
        else { return }
        Task {
            await withTaskGroup(of: Void.self) { group in
                for task in tasks { group.addTask { await task() } }
            }
            channel.send(.eventsDelivered)
        }
    }

    private func run(_ task: @escaping @Sendable () async -> Void) {
        let waits = held.withLock { held -> Bool in
            guard held != nil else { return false }
            held?.append(task)
            return true
        }
        if !waits { Task { await task() } }
    }

    private func upload(_ request: HTTPRequest, file: URL, description: String) async {
        do {
            let source = try ByteStream.file(at: file)
            let sent = Mutex<Int64>(0)
            let counted = ByteStream(length: source.length) { [channel] in
                guard let chunk = try await source.nextChunk() else { return nil }
                let total = sent.withLock { sent in
                    sent += Int64(chunk.count)
                    return sent
                }
                channel.send(.progress(taskDescription: description, bytes: total, expectedBytes: source.length))
                return chunk
            }
            let (head, body) = try await transport.stream(request, body: counted, options: options)
            channel.send(.uploaded(taskDescription: description, response: head, body: try await body.prefix(64 * 1024)))
        } catch {
            channel.send(.failed(taskDescription: description, error: Self.classify(error)))
        }
    }

    private func download(_ request: HTTPRequest, description: String) async {
        let target = folder.appendingPathComponent(UUID().uuidString)
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let (head, body) = try await transport.stream(request, body: nil, options: options)
            guard FileManager.default.createFile(atPath: target.path, contents: nil, attributes: [.posixPermissions: 0o600])
            else {
                throw OutpostError(
                    .invalidRequest, "Cannot write \(target.path)", suggestion: "Give the session a writable folder")
            }
            try await write(body, to: target, description: description)
            channel.send(.downloaded(taskDescription: description, response: head, file: target))
        } catch {
            try? FileManager.default.removeItem(at: target)
            channel.send(.failed(taskDescription: description, error: Self.classify(error)))
        }
    }

    private func write(_ body: ByteStream, to target: URL, description: String) async throws {
        let handle = try FileHandle(forWritingTo: target)
        defer { try? handle.close() }
        var received: Int64 = 0
        for try await chunk in body {
            try handle.write(contentsOf: chunk)
            received += Int64(chunk.count)
            channel.send(.progress(taskDescription: description, bytes: received, expectedBytes: body.length))
        }
    }

    static func classify(_ error: any Error) -> OutpostError {
        if let error = error as? OutpostError { return error }
        if error is CancellationError { return .transportCancelled(underlying: error) }
        return OutpostError(.transportFailed, "The transfer failed: \(error)", underlying: error)
    }
}
