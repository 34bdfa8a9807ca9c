import Foundation
import OutpostServerTesting
import Testing

@testable import OutpostServer

extension StorageConformanceTests {
    @Test(
        "Record types: the types holding records in order, after a name, up to a limit; a type emptied is gone",
        arguments: backends)
    func recordTypes(_ backend: ScratchDatabase.Backend) async throws {
        try await withStorage(backend) { storage, _ in
            let listing = try #require(storage as? any RecordTypeStorage)
            #expect(try await listing.recordTypes(after: nil, limit: 10) == [])
            for type in ["posts", "albums", "notes", "posts", "notes"] {
                _ = try await storage.createRecord(type: type, fields: ["n": 1], owner: nil)
            }
            #expect(try await listing.recordTypes(after: nil, limit: 10) == ["albums", "notes", "posts"])
            #expect(try await listing.recordTypes(after: nil, limit: 2) == ["albums", "notes"])
            #expect(try await listing.recordTypes(after: "albums", limit: 10) == ["notes", "posts"])
            #expect(try await listing.recordTypes(after: "notes", limit: 1) == ["posts"])
            #expect(try await listing.recordTypes(after: "posts", limit: 10) == [])
            #expect(try await listing.recordTypes(after: nil, limit: 0) == [])
            let album = try #require(
                try await storage.listRecords(RecordQuery(type: "albums", viewer: nil), from: nil, backwards: false).first)
            try await storage.deleteRecord(type: "albums", id: album.id, expectedVersion: nil)
            #expect(try await listing.recordTypes(after: nil, limit: 10) == ["notes", "posts"])
        }
    }
}
