import ArgumentParser
import Foundation
import Outpost
@_spi(OutpostInternal) import OutpostCore
import Synchronization

/// Where the CLI keeps its outbox.
struct OutboxOptions: ParsableArguments {
    @Option(
        name: .customLong("outbox"),
        help: "The outbox journal (default: $XDG_CONFIG_HOME/outpost/outbox.journal).")
    var outboxPath: String?

    var fileURL: URL {
        outboxPath.map { URL(fileURLWithPath: $0) } ?? Outbox.Configuration.defaultFileURL(application: "outpost")
    }

    /// Opens the outbox over `client`, runs `body`, and always closes it.
    func with<T>(
        client: OutpostClient, configure: (inout Outbox.Configuration) -> Void = { _ in },
        _ body: (Outbox) async throws -> T
    ) async throws -> T {
        var configuration = Outbox.Configuration(fileURL: fileURL)
        configure(&configuration)
        let outbox = try await Outbox.open(configuration, client: client)
        if let corruption = outbox.corruption { FileHandle.standardError.write(Data("warning: \(corruption)\n".utf8)) }
        do {
            let result = try await body(outbox)
            await outbox.close()
            return result
        } catch {
            await outbox.close()
            throw error
        }
    }
}

struct OutboxCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "outbox",
        abstract: "List, replay and drop the writes queued with `records create --queue` (or while the server was down).",
        subcommands: [List.self, Replay.self, Drop.self])

    static func describe(_ entry: OutboxEntry) -> String {
        let state = entry.failure.map { "failed: \($0.message)" } ?? "pending"
        return "\(entry.id.uuidString)  \(entry.label)  key=\(entry.idempotencyKey)  \(state)"
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print the queued writes, oldest first.")
        @OptionGroup var outbox: OutboxOptions
        @OptionGroup var options: SignInOptions

        func run() async throws {
            try await RecordsCommand.run(options) { client in
                try await outbox.with(client: client) { outbox in
                    let entries = try await outbox.entries
                    for entry in entries { print(OutboxCommand.describe(entry)) }
                    FileHandle.standardError.write(
                        Data("\(entries.count) queued write(s) in \(outbox.configuration.fileURL.path)\n".utf8))
                }
            }
        }
    }

    struct Replay: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send the queued writes to the server; exits non-zero when some could not be sent.")
        @Option(help: "Writes to different records sent at the same time.") var concurrency = 4
        @Option(help: .hidden) var stallAfterResponses: Int?
        @OptionGroup var outbox: OutboxOptions
        @OptionGroup var options: SignInOptions

        func run() async throws {
            let stallAt = stallAfterResponses
            let responses = ResponseCounter()
            try await RecordsCommand.run(options) { client in
                try await outbox.with(
                    client: client,
                    configure: {
                        $0.maxConcurrentWrites = concurrency
                        guard let stallAt else { return }
                        // For the kill -9 test: after the N-th response, before it is recorded, say so and hang.
                        $0.afterResponse = { entry, status in
                            guard responses.next() == stallAt else { return }
                            FileHandle.standardOutput.write(Data("stalled \(entry.id.uuidString) \(status)\n".utf8))
                            let (never, _) = AsyncStream.makeStream(of: Void.self)
                            for await _ in never {}
                        }
                    }
                ) { outbox in
                    let events = outbox.events()
                    let printer = Task {
                        for await event in events {
                            switch event {
                            case .completed(let done):
                                print(
                                    "done \(done.entry.id.uuidString) \(done.status)\(done.alreadyApplied ? " (already applied)" : "")  \(done.entry.label)"
                                )
                            case .failed(let entry, let failure):
                                print("failed \(entry.id.uuidString)  \(entry.label): \(failure.message)")
                            case .retrying(let entry, let error, let attempt, let delay):
                                FileHandle.standardError.write(
                                    Data("retrying \(entry.label) (try \(attempt), next in \(delay)): \(error.message)\n".utf8))
                            case .pending, .corruption:
                                break
                            }
                        }
                    }
                    let summary = await outbox.replay()
                    let remaining = try await outbox.entries.count
                    await outbox.close()
                    await printer.value
                    FileHandle.standardError.write(
                        Data(
                            "\(summary.completed) sent, \(summary.failed) refused, \(summary.deferred) waiting; \(remaining) left in the outbox\n"
                                .utf8))
                    if remaining > 0 { throw OutboxLeft(count: remaining) }
                }
            }
        }
    }

    struct Drop: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove a queued write without sending it.")
        @Argument(help: "The write's id, as `outbox list` prints it.") var id: String
        @OptionGroup var outbox: OutboxOptions
        @OptionGroup var options: SignInOptions

        func validate() throws {
            guard UUID(uuidString: id) != nil else {
                throw ValidationError("'\(id)' is not a write id; see `outpost outbox list`")
            }
        }

        func run() async throws {
            try await RecordsCommand.run(options) { client in
                try await outbox.with(client: client) { outbox in
                    let dropped = try await outbox.cancel(UUID(uuidString: id)!)
                    FileHandle.standardError.write(Data("dropped \(dropped.label)\n".utf8))
                }
            }
        }
    }
}

/// `outbox replay` left writes behind.
struct OutboxLeft: Error, CustomStringConvertible {
    var count: Int
    var description: String { "\(count) write(s) are still queued; see `outpost outbox list`" }
}

/// Counts responses across tasks.
final class ResponseCounter: Sendable {
    private let count = Mutex(0)
    func next() -> Int {
        count.withLock { value in
            value += 1
            return value
        }
    }
}

extension RecordsCommand.Create {
    /// With `--queue`, queues the create in the outbox. Otherwise sends it with an idempotency key,
    /// and queues it under the same key when the server cannot be reached (so a create that did
    /// arrive is not made twice by the replay).
    func createOrQueue(_ client: OutpostClient, _ request: Request) async throws {
        let keyed = request.idempotencyKey()
        if !queue {
            do {
                try RecordsCommand.printRecord(try await client.send(keyed))
                return
            } catch let error as OutpostError
                where error.status == nil && [.cannotConnect, .timeout, .connectionLost].contains(error.code)
            {
                FileHandle.standardError.write(
                    Data("The server cannot be reached (\(error.message)); queueing the write.\n".utf8))
            }
        }
        try await outbox.with(client: client) { outbox in
            let entry = try await outbox.enqueue(keyed, label: "create \(type)")
            print(entry.id.uuidString)
            FileHandle.standardError.write(
                Data("queued in \(outbox.configuration.fileURL.path); send it with `outpost outbox replay`\n".utf8))
        }
    }
}
