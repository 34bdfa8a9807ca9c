import ArgumentParser
import Foundation
import OutpostServer

struct TypesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "types",
        abstract: "Declare, list and drop the indexes of record types (works on the database directly).",
        discussion: """
            A list with filter or sort that no declared index serves runs only on a type of at most 10,000 records
            (the server's unindexedListLimit); past that it is answered 400 index_required, naming the index to declare.
            An index holds 1 to \(RecordIndex.maxFields) top-level fields, in order. It serves a list sorted by its fields
            (sort=-views by "views", or by "views title"; all keys in one direction), also after fields the filter pins
            with == (filter=record.tag == "a" and sort=-views by "tag views"), and a list sorted by time whose filter
            tests its first field at the top level of && (filter=record.views > 10). Declaring builds the index
            at once (on PostgreSQL without blocking writes) and is idempotent; every server on the database uses it.
            A rules file can declare indexes too: {"types": {"posts": {"indexes": [["views"], ["tag", "title"]]}}}.
              outpost types index posts views
              outpost types index posts tag views
              outpost types indexes posts
              outpost types drop-index posts tag views
            """,
        subcommands: [Index.self, Indexes.self, DropIndex.self])

    /// The index the arguments name, or a validation error that says what to write.
    static func index(type: String, fields: [String]) throws -> RecordIndex {
        do {
            return try RecordIndex(type: type, fields: fields)
        } catch {
            throw ValidationError(error.message)
        }
    }

    struct Index: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Build an index on the records of a type and declare it (nothing happens when it exists).")
        @Argument(help: "The record type, e.g. posts.") var type: String
        @Argument(help: "1 to \(RecordIndex.maxFields) top-level field names, in order, e.g. views, or tag views.")
        var fields: [String] = []
        @OptionGroup var options: DatabaseOptions

        func validate() throws { _ = try TypesCommand.index(type: type, fields: fields) }

        func run() async throws {
            let index = try TypesCommand.index(type: type, fields: fields)
            try await options.withStorage { try await $0.createRecordIndex(index) }
            print("\(index.type): \(index.fields.joined(separator: ", "))")
        }
    }

    struct Indexes: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print the declared indexes, of one type or of all.")
        @Argument(help: "A record type; without it, every type.") var type: String?
        @OptionGroup var options: DatabaseOptions

        func run() async throws {
            let indexes = try await options.withStorage { try await $0.recordIndexes(type: type) }
            if indexes.isEmpty {
                print(type.map { "Type \($0) has no declared index." } ?? "No index is declared.")
            }
            for index in indexes { print("\(index.type): \(index.fields.joined(separator: ", "))") }
        }
    }

    struct DropIndex: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "drop-index", abstract: "Drop a declared index and its declaration.")
        @Argument(help: "The record type.") var type: String
        @Argument(help: "The index's fields, in order, as declared.") var fields: [String] = []
        @OptionGroup var options: DatabaseOptions

        func validate() throws { _ = try TypesCommand.index(type: type, fields: fields) }

        func run() async throws {
            let index = try TypesCommand.index(type: type, fields: fields)
            let dropped = try await options.withStorage { try await $0.dropRecordIndex(index) }
            guard dropped else {
                FileHandle.standardError.write(
                    Data(
                        "error: type \(type) has no index on \(fields.joined(separator: ", ")); `outpost types indexes \(type)` lists them\n"
                            .utf8))
                throw ExitCode.failure
            }
            print("Dropped \(index.type): \(index.fields.joined(separator: ", "))")
        }
    }
}
