import Foundation
@_spi(OutpostInternal) import OutpostCore
import OutpostServerTesting
import Testing

@testable import OutpostServer

extension StorageConformanceTests {
    @Test(
        "A batch runs its writes in order in one transaction: each sees the ones before, a failure undoes all",
        arguments: backends)
    func recordBatch(_ backend: ScratchDatabase.Backend) async throws {
        try await withStorage(backend) { storage, _ in
            let kept = try await storage.createRecord(type: "notes", fields: ["n": 1], owner: nil)
            let gone = try await storage.createRecord(type: "notes", fields: ["n": 2], owner: nil)
            let respond: @Sendable ([RecordBatchResult]) -> StoredResponse = { results in
                StoredResponse(status: 200, headers: [], body: Data("\(results.count)".utf8))
            }
            let (_, response) = try await storage.writeRecords(
                [
                    .create(type: "notes", owner: "u1", isPrivate: false) { ["n": 3] },
                    .update(type: "notes", id: kept.id) { current in
                        #expect(current.version == 1)
                        return ["n": 10]
                    },
                    .update(type: "notes", id: kept.id) { current in
                        #expect(current.version == 2)
                        let seen = try current.fields["n"]
                        #expect(seen == 10)
                        return ["n": 11]
                    },
                    .delete(type: "notes", id: gone.id) { _ in },
                ], key: nil, lifetime: .seconds(60), respond: respond)
            #expect(response?.body == Data("4".utf8))
            #expect(try await storage.record(type: "notes", id: kept.id)?.version == 3)
            #expect(try await storage.record(type: "notes", id: gone.id) == nil)

            struct Refused: Error {}
            do {
                _ = try await storage.writeRecords(
                    [
                        .update(type: "notes", id: kept.id) { _ in ["n": 99] },
                        .create(type: "notes", owner: nil, isPrivate: false) { ["n": 4] },
                        .delete(type: "notes", id: kept.id) { _ in throw Refused() },
                    ], key: nil, lifetime: .seconds(60), respond: respond)
                Issue.record("a batch with a refused write was written")
            } catch let failure as RecordBatchFailure {
                #expect(failure.index == 2)
                #expect(failure.error is Refused)
            }
            do {
                _ = try await storage.writeRecords(
                    [.delete(type: "notes", id: "missing") { _ in }], key: nil, lifetime: .seconds(60), respond: respond)
                Issue.record("a delete of a missing record was answered")
            } catch let failure as RecordBatchFailure {
                guard case RecordWriteFailure.notFound = failure.error else {
                    Issue.record("unexpected \(failure.error)")
                    return
                }
            }
            let after = try await storage.record(type: "notes", id: kept.id)
            #expect(after?.version == 3)
            #expect(try after?.fields["n"] == 11)
            let page = try await storage.listRecords(RecordQuery(type: "notes", limit: 10), page: 1)
            #expect(page.total == 2)
        }
    }

    @Test("A keyed batch keeps its answer in its transaction; a repeat writes nothing and replays it", arguments: backends)
    func keyedRecordBatch(_ backend: ScratchDatabase.Backend) async throws {
        try await withStorage(backend) { storage, _ in
            let key = IdempotencyKey(caller: "user:u1", key: "k1", fingerprint: "f1")
            let writes: [RecordBatchWrite] = [.create(type: "notes", owner: "u1", isPrivate: false) { ["n": 1] }]
            let respond: @Sendable ([RecordBatchResult]) -> StoredResponse = { results in
                guard case .created(let record) = results.first else {
                    return StoredResponse(status: 500, headers: [], body: Data())
                }
                return StoredResponse(status: 200, headers: [["Content-Type", "application/json"]], body: Data(record.id.utf8))
            }
            let (claim, first) = try await storage.writeRecords(writes, key: key, lifetime: .seconds(60), respond: respond)
            #expect(claim == .claimed(token: ""))
            let stored = try #require(first)
            let (again, none) = try await storage.writeRecords(writes, key: key, lifetime: .seconds(60), respond: respond)
            #expect(again == .replay(stored))
            #expect(none == nil)
            var other = key
            other.fingerprint = "f2"
            #expect(
                try await storage.writeRecords(writes, key: other, lifetime: .seconds(60), respond: respond).claim == .mismatch)
            #expect(try await storage.listRecords(RecordQuery(type: "notes", limit: 10), page: 1).total == 1)
            // A failed keyed batch keeps no key: the next try with it runs.
            let failing = IdempotencyKey(caller: "user:u1", key: "k2", fingerprint: "f1")
            await #expect(throws: RecordBatchFailure.self) {
                _ = try await storage.writeRecords(
                    [.delete(type: "notes", id: "missing") { _ in }], key: failing, lifetime: .seconds(60), respond: respond)
            }
            let (retry, answer) = try await storage.writeRecords(writes, key: failing, lifetime: .seconds(60), respond: respond)
            #expect(retry == .claimed(token: ""))
            #expect(answer != nil)
        }
    }
}
