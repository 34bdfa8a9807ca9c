import ArgumentParser
import Foundation
import Outpost

struct RecordsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "records",
        abstract: "List, read, create, replace, patch and delete records on an Outpost server.",
        subcommands: [List.self, Get.self, Create.self, Update.self, Patch.self, Delete.self])

    /// Runs `body` with a client, prints failures as one line on stderr, and exits non-zero on failure.
    static func run(_ options: SignInOptions, _ body: (OutpostClient) async throws -> Void) async throws {
        let client = try await options.signedClient()
        do {
            try await body(client)
            try await client.shutdown()
        } catch {
            try? await client.shutdown()
            FileHandle.standardError.write(Data("error: \(error)\n".utf8))
            throw ExitCode.failure
        }
    }

    static func path(_ type: String, _ id: String? = nil) -> String {
        "/records/" + Request.pathSegment(type) + (id.map { "/" + Request.pathSegment($0) } ?? "")
    }

    /// A JSON object from an argument, or from standard input when the argument is `-`.
    static func object(_ text: String) throws -> JSONValue {
        let data = text == "-" ? FileHandle.standardInput.readDataToEndOfFile() : Data(text.utf8)
        guard let value = try? JSONValue(parsing: data), case .object = value else {
            throw ValidationError("Expected a JSON object, e.g. '{\"name\": \"Ada\"}' (or - to read it from standard input)")
        }
        return value
    }

    static func printRecord(_ response: ClientResponse) throws {
        print(try response.json().jsonString(pretty: true))
        if let etag = response.headerFields[.eTag] { FileHandle.standardError.write(Data("ETag: \(etag)\n".utf8)) }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List records: one page, a numbered page, or --all of them (one JSON object a line).")

        @Argument(help: "The record type, e.g. people.") var type: String
        @Flag(help: "Stream every record, one JSON object a line; shows progress on a terminal.") var all = false
        @Option(help: "A page number (legacy page-number pagination).") var page: Int?
        @Option(name: .customLong("per-page"), help: "Records per page, 1–100.") var perPage = 20
        @Option(help: "Where to start (a next_cursor from an earlier page).") var cursor: String?
        @Option(name: .customLong("filter"), help: "field=value equality filter (repeatable).") var filters: [String] = []
        @Option(
            name: .customLong("where"),
            help: "A filter expression over record, sent as filter=, e.g. 'record.views > 10 && record.title ^= \"Intro\"'.")
        var expression: String?
        @Option(help: "created, -created, updated, -updated, or up to 3 comma-separated fields: --sort=-views,title.")
        var sort: String?
        @OptionGroup var options: SignInOptions

        func validate() throws {
            guard (1...100).contains(perPage) else { throw ValidationError("--per-page must be between 1 and 100") }
            if let page, page < 1 { throw ValidationError("--page starts at 1") }
            if all && page != nil { throw ValidationError("--all streams every page; leave out --page") }
            for filter in filters where !filter.contains("=") {
                throw ValidationError("--filter takes field=value, got '\(filter)'")
            }
        }

        var query: [URLQueryItem] {
            var items = filters.map { pair -> URLQueryItem in
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                return URLQueryItem(name: String(parts[0]), value: String(parts[1]))
            }
            if let expression { items.append(URLQueryItem(name: "filter", value: expression)) }
            if let sort { items.append(URLQueryItem(name: "sort", value: sort)) }
            return items
        }

        func run() async throws {
            try await RecordsCommand.run(options) { client in
                let store = client.entities(.outpost)
                let request = ListRequest(
                    resourcePath: "records/\(type)", of: JSONValue.self, pageSize: perPage, query: query,
                    pagination: page == nil ? .outpostCursor : .outpostPageNumbers, page: page, cursor: cursor)
                guard all else {
                    let response = try await client.send(.get(RecordsCommand.path(type), query: pageQuery()))
                    print(try response.json().jsonString(pretty: true))
                    return
                }
                let progress = try await ProgressLine.forList(client: client, type: type, query: query)
                var count = 0
                for try await record in store.items(request) {
                    print(record.jsonString())
                    count += 1
                    progress?.update(count)
                }
                progress?.finish(count)
            }
        }

        func pageQuery() -> [URLQueryItem] {
            var items = query
            if let page {
                items += [
                    URLQueryItem(name: "page", value: String(page)), URLQueryItem(name: "per_page", value: String(perPage)),
                ]
            } else {
                items.append(URLQueryItem(name: "limit", value: String(perPage)))
                if let cursor { items.append(URLQueryItem(name: "cursor", value: cursor)) }
            }
            return items
        }
    }

    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print one record (its ETag goes to stderr).")
        @Argument var type: String
        @Argument var id: String
        @OptionGroup var options: SignInOptions

        func run() async throws {
            try await RecordsCommand.run(options) { client in
                try RecordsCommand.printRecord(try await client.send(.get(RecordsCommand.path(type, id))))
            }
        }
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create a record from a JSON object (- reads standard input).")
        @Argument var type: String
        @Argument(help: "The record's fields as a JSON object, or - for standard input.") var json: String
        @Flag(help: "Queue the write in the outbox instead of sending it (send it later with `outbox replay`).")
        var queue = false
        @OptionGroup var outbox: OutboxOptions
        @OptionGroup var options: SignInOptions

        func run() async throws {
            let body = try RecordsCommand.object(json)
            try await RecordsCommand.run(options) { client in
                try await createOrQueue(client, .post(RecordsCommand.path(type), json: body))
            }
        }
    }

    struct Update: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Replace a record's fields (PUT).")
        @Argument var type: String
        @Argument var id: String
        @Argument(help: "The new fields as a JSON object, or - for standard input.") var json: String
        @Option(name: .customLong("if-match"), help: "Only if the record still has this ETag.") var ifMatch: String?
        @OptionGroup var options: SignInOptions

        func run() async throws {
            let body = try RecordsCommand.object(json)
            try await RecordsCommand.run(options) { client in
                var request = Request(method: .put, path: RecordsCommand.path(type, id), body: .json(body))
                if let ifMatch { request.headers[.ifMatch] = ifMatch }
                try RecordsCommand.printRecord(try await client.send(request))
            }
        }
    }

    struct Patch: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Change some fields with a JSON Merge Patch (null removes a field).")
        @Argument var type: String
        @Argument var id: String
        @Argument(help: "The merge patch as a JSON object, or - for standard input.") var json: String
        @Option(name: .customLong("if-match"), help: "Only if the record still has this ETag.") var ifMatch: String?
        @OptionGroup var options: SignInOptions

        func run() async throws {
            let body = try RecordsCommand.object(json)
            try await RecordsCommand.run(options) { client in
                var request = Request(
                    method: .patch, path: RecordsCommand.path(type, id),
                    body: .data(body.jsonData(), contentType: MergePatch.contentType))
                if let ifMatch { request.headers[.ifMatch] = ifMatch }
                try RecordsCommand.printRecord(try await client.send(request))
            }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete a record.")
        @Argument var type: String
        @Argument var id: String
        @Option(name: .customLong("if-match"), help: "Only if the record still has this ETag.") var ifMatch: String?
        @OptionGroup var options: SignInOptions

        func run() async throws {
            try await RecordsCommand.run(options) { client in
                var request = Request.delete(RecordsCommand.path(type, id))
                if let ifMatch { request.headers[.ifMatch] = ifMatch }
                _ = try await client.send(request)
                FileHandle.standardError.write(Data("deleted \(type)/\(id)\n".utf8))
            }
        }
    }
}

/// A progress bar on standard error, drawn only when standard error is a terminal.
struct ProgressLine {
    let total: Int

    /// Asks the server for the list's total (one tiny page-number request) when stderr is a terminal.
    static func forList(client: OutpostClient, type: String, query: [URLQueryItem]) async throws -> ProgressLine? {
        guard isatty(STDERR_FILENO) == 1 else { return nil }
        let probe = try await client.send(
            .get(
                RecordsCommand.path(type),
                query: query + [URLQueryItem(name: "page", value: "1"), URLQueryItem(name: "per_page", value: "1")]))
        return ProgressLine(total: try probe.json()["total"]?.intValue ?? 0)
    }

    func update(_ count: Int) {
        guard count % 50 == 0 || count == total else { return }
        draw(count)
    }

    func finish(_ count: Int) {
        draw(count)
        FileHandle.standardError.write(Data("\n".utf8))
    }

    private func draw(_ count: Int) {
        let width = 30
        let fraction = total > 0 ? min(1, Double(count) / Double(total)) : 1
        let filled = Int(fraction * Double(width))
        let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
        FileHandle.standardError.write(Data("\r\(bar) \(count)/\(total) records".utf8))
    }
}
