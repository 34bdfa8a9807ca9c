public import Foundation
@_spi(OutpostInternal) public import OutpostCore

/// The server's storage boundary. SQLite (``SQLiteStorage``) is the embedded default;
/// ``PostgresStorage`` implements the same protocol for several instances on one database.
/// ``DatabaseLocation`` opens either; ``ServerConfiguration/storageFactory`` injects any other.
///
/// Every change that needs more than one statement (an idempotent create, a merge patch, a first
/// provider sign-in) is one method here, which each backend runs as a transaction on one
/// connection of its own: no backend runs `BEGIN` on a connection other requests share.
public protocol Storage: RecordStorage, RecordBatchStorage, AuthStorage, OpenIDStorage, IdempotencyStorage, RuleStorage,
    InviteStorage, RecordIndexStorage, AccountStorage
{
    /// Creates or upgrades the schema. Safe to call on every start.
    func migrate() async throws
    /// Throws when the database cannot answer a trivial query.
    func checkHealth() async throws
    /// The schema version after ``migrate()``.
    func schemaVersion() async throws -> Int
    /// ``schemaVersion()``, which throws when the database cannot answer, in as few round trips
    /// as the backend can (`GET /health` asks it on every probe). The default calls
    /// ``checkHealth()``, then ``schemaVersion()``.
    func health() async throws -> Int
    /// Closes connections. Nothing may be called afterwards.
    func close() async throws
}

extension Storage {
    public func health() async throws -> Int {
        try await checkHealth()
        return try await schemaVersion()
    }
}

/// Records: schemaless JSON objects per type, with server-assigned ids and optimistic versions.
public protocol RecordStorage: Sendable {
    /// Creates a record; a private one is readable by `owner` only.
    func createRecord(type: String, fields: [String: JSONValue], owner: String?, isPrivate: Bool) async throws -> StoredRecord
    func record(type: String, id: String) async throws -> StoredRecord?
    /// - Throws: ``RecordWriteFailure`` when the record is missing or its version differs.
    func replaceRecord(type: String, id: String, fields: [String: JSONValue], expectedVersion: Int?) async throws -> StoredRecord
    /// Reads the record, computes its new fields with `change`, and writes them, in one transaction
    /// that holds the record against every other writer (of any instance) until it commits: a
    /// read-modify-write (a merge patch) never loses a concurrent one.
    ///
    /// - Throws: ``RecordWriteFailure`` when the record is missing or, with `expectedVersion`, its
    ///   version differs; whatever `change` throws (nothing is written then).
    func updateRecord(
        type: String, id: String, expectedVersion: Int?,
        _ change: @Sendable (StoredRecord) throws -> [String: JSONValue]
    ) async throws -> StoredRecord
    /// - Throws: ``RecordWriteFailure`` when the record is missing or its version differs.
    func deleteRecord(type: String, id: String, expectedVersion: Int?) async throws
    func listRecords(_ query: RecordQuery, from position: RecordPosition?, backwards: Bool) async throws -> [StoredRecord]
    /// The same page as ``listRecords(_:from:backwards:)``, as the wire text the list route answers
    /// (``RecordPageText``): records in page order, at most `query.limit`, and whether more follow.
    /// The default implementation builds it from ``listRecords(_:from:backwards:)``.
    func listRecordText(_ query: RecordQuery, from position: RecordPosition?, backwards: Bool) async throws -> RecordPageText
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
