import ArgumentParser
import Foundation
import Testing

@testable import OutpostServer
@testable import outpost

@Suite("outpost types")
struct TypesCommandTests {
    @Test("index builds and declares an index the list query then reads; indexes lists it; drop-index drops it")
    func declareListDrop() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-types-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let database = folder.appendingPathComponent("db.sqlite").path
        let options = try DatabaseOptions.parse(["--database", database])
        try await options.withStorage { storage in
            for index in 0..<50 {
                _ = try await storage.createRecord(type: "posts", fields: ["views": .int(index)], owner: nil)
            }
        }
        try await TypesCommand.Index.parse(["posts", "views", "--database", database]).run()
        // Idempotent: declaring it again changes nothing.
        try await TypesCommand.Index.parse(["posts", "views", "--database", database]).run()
        try await TypesCommand.Indexes.parse(["posts", "--database", database]).run()
        let index = try RecordIndex(type: "posts", fields: ["views"])
        try await options.withStorage { storage in
            #expect(try await storage.recordIndexes(type: nil) == [index])
            let sqlite = try #require(storage as? SQLiteStorage)
            var query = RecordQuery(type: "posts", limit: 20)
            query.filter = try ListFilter(parsing: "record.views > 10").predicate
            let order = try RecordRoutes.order("-views")
            query.order = order
            let (sql, binds) = sqlite.orderedSQL(query, order: order, from: nil, backwards: false, limit: 21)
            let plan = try await sqlite.reader.query("EXPLAIN QUERY PLAN " + sql, binds).compactMap {
                $0.column("detail")?.string
            }
            #expect(plan.contains { $0.contains(index.name) }, "\(plan)")
            #expect(!plan.contains { $0.contains("TEMP B-TREE") }, "\(plan)")
        }
        try await TypesCommand.DropIndex.parse(["posts", "views", "--database", database]).run()
        let left = try await options.withStorage { try await $0.recordIndexes(type: "posts") }
        #expect(left.isEmpty)
        // Dropping an index that is not declared fails.
        await #expect(throws: ExitCode.self) {
            try await TypesCommand.DropIndex.parse(["posts", "views", "--database", database]).run()
        }
    }

    @Test("bad type and field names, reserved names and too many fields are refused before the database is touched")
    func badInput() {
        for arguments in [
            ["posts"], ["posts", "a", "b", "c", "d"], ["posts", "views'); DROP TABLE records; --"], ["po sts", "views"],
            ["posts", "id"], ["posts", "a.b"], ["posts", "views", "views"],
        ] {
            #expect(throws: (any Error).self, "\(arguments)") { try TypesCommand.Index.parse(arguments) }
            #expect(throws: (any Error).self, "\(arguments)") { try TypesCommand.DropIndex.parse(arguments) }
        }
        do {
            _ = try TypesCommand.Index.parse(["posts", "views;drop"])
            Issue.record("a field name with ';' was accepted")
        } catch {
            let message = TypesCommand.Index.message(for: error)
            #expect(message.contains("'views;drop' is not a field name"), "\(message)")
            #expect(message.contains("e.g. views"))
        }
    }
}
