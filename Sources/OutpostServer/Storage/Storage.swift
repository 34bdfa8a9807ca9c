public import Foundation
public import OutpostCore

/// The server's storage boundary. SQLite is the embedded default; a PostgreSQL store implements
/// the same protocol to scale out.
public protocol Storage: RecordStorage, AuthStorage, OpenIDStorage, IdempotencyStorage {
    /// Creates or upgrades the schema. Safe to call on every start.
    func migrate() async throws
    /// Throws when the database cannot answer a trivial query.
    func checkHealth() async throws
    /// The schema version after ``migrate()``.
    func schemaVersion() async throws -> Int
    /// Closes connections. Nothing may be called afterwards.
    func close() async throws
}

/// Records: schemaless JSON objects per type, with server-assigned ids and optimistic versions.
public protocol RecordStorage: Sendable {
    /// Creates a record; a private one is readable by `owner` only.
    func createRecord(type: String, fields: [String: JSONValue], owner: String?, isPrivate: Bool) async throws -> StoredRecord
    func record(type: String, id: String) async throws -> StoredRecord?
    /// - Throws: ``RecordWriteFailure`` when the record is missing or its version differs.
    func replaceRecord(type: String, id: String, fields: [String: JSONValue], expectedVersion: Int?) async throws -> StoredRecord
    /// - Throws: ``RecordWriteFailure`` when the record is missing or its version differs.
    func deleteRecord(type: String, id: String, expectedVersion: Int?) async throws
    func listRecords(_ query: RecordQuery, from position: RecordPosition?, backwards: Bool) async throws -> [StoredRecord]
    func listRecords(_ query: RecordQuery, page: Int) async throws -> (records: [StoredRecord], total: Int)
    /// A random secret kept with the data, created on first use.
    func secret(named name: String) async throws -> Data
}

extension RecordStorage {
    /// Creates a record everyone may read.
    public func createRecord(type: String, fields: [String: JSONValue], owner: String?) async throws -> StoredRecord {
        try await createRecord(type: type, fields: fields, owner: owner, isPrivate: false)
    }
}
