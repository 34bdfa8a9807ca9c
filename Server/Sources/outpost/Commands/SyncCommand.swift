import ArgumentParser
import Foundation
import Outpost
import OutpostSync

/// `outpost sync`: an offline-first local copy of records (OutpostSync's `SyncedStore`) in a folder.
struct SyncCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Keep a local copy of records in a folder: pull, query and write offline, push later.",
        discussion: """
            query prints one JSON object a line: the record's fields plus "_state" ("pending", \
            "confirmed" or "failed") and, for a failed record, "_error" with the server's reason.
            """,
        subcommands: [Pull.self, Query.self, Create.self, Patch.self, Delete.self, Status.self, Push.self])

    /// The `--store` folder, shared by every subcommand.
    struct StoreOptions: ParsableArguments {
        @Option(help: "The store's folder (created owner-only); one folder per account.") var store: String

        var folder: URL { URL(fileURLWithPath: store, isDirectory: true) }
    }

    /// Runs `body`, prints a failure as one line on stderr, and exits non-zero on failure.
    static func run(_ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch let error as ExitCode {
            throw error
        } catch {
            FileHandle.standardError.write(Data("error: \(error)\n".utf8))
            throw ExitCode.failure
        }
    }

    /// Opens the store with a signed client, runs `body`, and shuts the client down.
    static func run(_ store: StoreOptions, _ options: SignInOptions, _ body: (SyncedStore) async throws -> Void) async throws {
        try await RecordsCommand.run(options) { client in
            try await body(try SyncedStore(folder: store.folder, client: client))
        }
    }

    /// A record as one JSON line: its fields, `id`, `_state` and, when failed, `_error`.
    static func line(_ record: SyncedRecord) -> String {
        var line = record.fields
        line["id"] = .string(record.id)
        line["_state"] = .string(record.state.name)
        if case .failed(let message) = record.state { line["_error"] = .string(message) }
        return JSONValue.object(line).jsonString()
    }

    /// Pending and failed counts per type as one JSON line.
    static func line(_ counts: [String: SyncTypeStatus]) -> String {
        JSONValue.object(counts.mapValues { .object(["pending": .int($0.pending), "failed": .int($0.failed)]) }).jsonString()
    }

    struct Pull: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Load a type's records into the store, or catch up with its changes.")
        @Argument(help: "The record type, e.g. notes.") var type: String
        @OptionGroup var store: StoreOptions
        @OptionGroup var options: SignInOptions

        func run() async throws {
            try await SyncCommand.run(store, options) { synced in try await synced.pull(type) }
        }
    }

    struct Query: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the store's records of a type (no network): one JSON object a line with \"_state\".")
        @Argument(help: "The record type, e.g. notes.") var type: String
        @Option(help: "A filter expression over record, as for records list --where, e.g. 'record.views > 10'.")
        var filter: String?
        @Option(help: "Up to 3 comma-separated fields, - for descending: --sort=-views,title (default: by id).")
        var sort: String?
        @OptionGroup var store: StoreOptions

        func run() async throws {
            try await SyncCommand.run {
                let synced = try SyncedStore(folder: store.folder)
                for record in try await synced.query(type, filter: filter, sort: sort) {
                    print(SyncCommand.line(record))
                }
            }
        }
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a record in the store (pending until push); prints its local id.")
        @Argument(help: "The record type, e.g. notes.") var type: String
        @Argument(help: "The fields as a JSON object, or - to read them from standard input.") var json: String
        @OptionGroup var store: StoreOptions

        func run() async throws {
            try await SyncCommand.run {
                let fields = try RecordsCommand.object(json).objectValue ?? [:]
                print(try await SyncedStore(folder: store.folder).create(type, fields: fields))
            }
        }
    }

    struct Patch: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Change a record in the store with a JSON merge patch (pending until push); prints the record.")
        @Argument(help: "The record type, e.g. notes.") var type: String
        @Argument(help: "The record's id (a server id or a local id from create).") var id: String
        @Argument(help: "The merge patch as a JSON object (null removes a field), or - to read it from standard input.")
        var json: String
        @OptionGroup var store: StoreOptions

        func run() async throws {
            try await SyncCommand.run {
                let fields = try RecordsCommand.object(json).objectValue ?? [:]
                let record = try await SyncedStore(folder: store.folder).patch(type, id: id, fields: fields)
                print(SyncCommand.line(record))
            }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete a record in the store (hidden at once, pending until push).")
        @Argument(help: "The record type, e.g. notes.") var type: String
        @Argument(help: "The record's id (a server id or a local id from create).") var id: String
        @OptionGroup var store: StoreOptions

        func run() async throws {
            try await SyncCommand.run {
                try await SyncedStore(folder: store.folder).delete(type, id: id)
            }
        }
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the writes not yet accepted, per type: {\"notes\": {\"pending\": 1, \"failed\": 0}}.")
        @OptionGroup var store: StoreOptions

        func run() async throws {
            try await SyncCommand.run {
                let counts = try await SyncedStore(folder: store.folder).status()
                print(SyncCommand.line(counts))
            }
        }
    }

    struct Push: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send the store's pending writes, then catch up every pulled type; prints the status.")
        @OptionGroup var store: StoreOptions
        @OptionGroup var options: SignInOptions

        func run() async throws {
            try await SyncCommand.run(store, options) { synced in
                try await synced.push()
                for type in try await synced.pulledTypes() { try await synced.pull(type) }
                let counts = try await synced.status()
                print(SyncCommand.line(counts))
            }
        }
    }
}
