import Foundation
@_spi(OutpostInternal) import OutpostCore
import OutpostServerTesting
import Testing

@testable import OutpostServer

extension StorageConformanceTests {
    /// The quota a database check raised, as a client would be answered; `nil` when `body` passed.
    static func quotaRefusal(_ body: () async throws -> Void) async -> String? {
        do {
            try await body()
            return nil
        } catch {
            guard let refusal = QuotaExceeded.serverError(for: error) else {
                Issue.record("not a quota refusal: \(error)")
                return "other"
            }
            #expect(refusal.status.code == 507)
            return refusal.details?["quota"]?.stringValue
        }
    }

    @Test(
        "Quotas: the database counts each owner's records and bytes on every write and refuses one past a bound, on any connection",
        arguments: backends)
    func quotas(_ backend: ScratchDatabase.Backend) async throws {
        try await withStorage(backend) { storage, database in
            let quotas = try #require(storage as? any QuotaStorage)
            let second = try await database.open()
            do {
                // No defaults written yet: nothing is bounded.
                #expect(try await quotas.defaultQuotas() == Quotas())
                try await quotas.setDefaultQuotas(Quotas(records: 3, recordBytes: 60, fileBytes: 1000, pendingUploads: 2))
                #expect(
                    try await quotas.defaultQuotas() == Quotas(records: 3, recordBytes: 60, fileBytes: 1000, pendingUploads: 2))
                let first = try await storage.createRecord(type: "a", fields: ["n": .int(1)], owner: "ann", isPrivate: false)
                _ = try await second.createRecord(type: "b", fields: ["n": .int(2)], owner: "ann", isPrivate: true)
                #expect(try await quotas.recordUsage(owner: "ann") == RecordUsage(records: 2, recordBytes: 14))
                // Bytes: 14 used of 60; a body of 50 bytes would pass it.
                let big: [String: JSONValue] = ["s": .string(String(repeating: "x", count: 42))]
                #expect(
                    await Self.quotaRefusal { _ = try await second.createRecord(type: "a", fields: big, owner: "ann") }
                        == "record_bytes")
                _ = try await storage.createRecord(type: "a", fields: ["n": .int(3)], owner: "ann")
                // Records: the fourth is refused on either connection; another owner and records without one are not.
                #expect(
                    await Self.quotaRefusal { _ = try await second.createRecord(type: "a", fields: [:], owner: "ann") }
                        == "records")
                #expect(
                    await Self.quotaRefusal { _ = try await storage.createRecord(type: "a", fields: [:], owner: "bob") } == nil)
                #expect(await Self.quotaRefusal { _ = try await storage.createRecord(type: "a", fields: [:], owner: nil) } == nil)
                #expect(try await quotas.recordUsage(owner: "ann") == RecordUsage(records: 3, recordBytes: 21))
                // An update that grows past the bytes bound is refused and changes nothing; one that shrinks passes.
                #expect(
                    await Self.quotaRefusal {
                        _ = try await storage.replaceRecord(type: "a", id: first.id, fields: big, expectedVersion: nil)
                    } == "record_bytes")
                #expect(try await storage.record(type: "a", id: first.id)?.body == #"{"n":1}"#)
                _ = try await storage.replaceRecord(type: "a", id: first.id, fields: [:], expectedVersion: nil)
                #expect(try await quotas.recordUsage(owner: "ann") == RecordUsage(records: 3, recordBytes: 16))
                // A deletion gives its place back.
                try await storage.deleteRecord(type: "a", id: first.id, expectedVersion: nil)
                #expect(try await quotas.recordUsage(owner: "ann") == RecordUsage(records: 2, recordBytes: 14))
                _ = try await second.createRecord(type: "a", fields: [:], owner: "ann")
                // The user's own bounds win over the defaults: none, then a number.
                var overrides = QuotaOverrides()
                overrides.records = .unlimited
                overrides.fileBytes = .limit(5)
                try await quotas.setQuotaOverrides(overrides, user: "ann")
                #expect(try await (second as? any QuotaStorage)?.quotaOverrides(user: "ann") == overrides)
                #expect(try await quotas.quotaOverrides(user: "nobody") == QuotaOverrides())
                _ = try await storage.createRecord(type: "a", fields: [:], owner: "ann")
                overrides.records = .limit(4)
                try await quotas.setQuotaOverrides(overrides, user: "ann")
                #expect(
                    await Self.quotaRefusal { _ = try await storage.createRecord(type: "a", fields: [:], owner: "ann") }
                        == "records")
                let effective = try await quotas.defaultQuotas().applying(try await quotas.quotaOverrides(user: "ann"))
                #expect(effective == Quotas(records: 4, recordBytes: 60, fileBytes: 5, pendingUploads: 2))
                try await second.close()
            } catch {
                try? await second.close()
                throw error
            }
        }
    }
}
