import Foundation
import Logging
@_spi(OutpostInternal) import OutpostCore
import Synchronization

/// What record writes share, whoever makes them (the record routes, or a plugin through
/// ``RecordData``): the before hooks, the update that reruns them when the record changed under
/// them, and waking the change feed.
struct RecordActions: Sendable {
    let storage: any Storage
    let access: AccessControl
    let hooks: RecordHooks
    /// Woken after every write, so change streams deliver it at once.
    let changes: ChangeFeed?
    let logger: Logger

    /// How deep writes from hooks may nest (a hook that writes a record whose hook writes again):
    /// deeper is refused, so two hooks that write each other's types end instead of looping.
    static let maxDepth = 4
    @TaskLocal static var depth = 0

    /// How often an update whose record kept changing under its hooks is tried before it is 409.
    static let updateAttempts = 5

    /// What the before hooks made of a write: the fields to store, and the writes the hooks joined
    /// to its transaction (``RecordWrite/alsoCreate(_:fields:)``).
    struct Prepared: Sendable {
        var fields: [String: JSONValue]
        var joined: [RecordBatchWrite] = []
    }

    /// Runs the before hooks of `operation` on `type` over `fields`.
    ///
    /// - Throws: ``ServerError``: 422 with the code of a hook's ``RecordRefusal``, the hook's own
    ///   ``ServerError``, or 500 `hook_failed` for any other error (logged, not shown).
    func before(
        _ operation: RecordOperation, type: String, id: String?, fields: [String: JSONValue],
        current: [String: JSONValue]?, caller: RuleCaller?, identity: CallerIdentity?, logger: Logger
    ) async throws -> Prepared {
        let hooks = hooks.before(operation, on: type)
        if hooks.isEmpty { return Prepared(fields: fields) }
        guard Self.depth < Self.maxDepth else {
            throw ServerError(
                .internalServerError, code: "hook_depth_exceeded",
                message: "Record hooks wrote records \(Self.maxDepth) levels deep while writing \(type); "
                    + "the server's plugins write each other's types in a loop")
        }
        var write = RecordWrite(
            operation: operation, type: type, id: id, fields: fields, current: current, caller: identity, logger: logger,
            data: data(caller: caller, identity: identity))
        try await Self.$depth.withValue(Self.depth + 1) {
            for hook in hooks {
                do {
                    try await hook(&write)
                } catch let refusal as RecordRefusal {
                    throw ServerError(
                        .unprocessableContent, code: refusal.code, message: refusal.message, details: refusal.details)
                } catch let error as ServerError {
                    throw error
                } catch {
                    logger.error(
                        "record hook failed",
                        metadata: ["type": "\(type)", "operation": "\(operation.rawValue)", "error": "\(error)"])
                    throw ServerError(
                        .internalServerError, code: "hook_failed",
                        message: "A server hook on \(type) records failed; the write did not happen. Try again later")
                }
            }
        }
        for key in StoredRecord.serverKeys { write.fields[key] = nil }
        return Prepared(fields: write.fields, joined: write.joined)
    }

    /// Commits `writes` (a write and the writes its hooks joined) in one transaction.
    ///
    /// - Throws: what the first write throws (``RecordWriteFailure`` among it); 500 `hook_failed`
    ///   when a joined write fails.
    func commit(_ writes: [RecordBatchWrite], logger: Logger) async throws -> RecordBatchResult {
        let results = ResultBox()
        do {
            _ = try await storage.writeRecords(writes, key: nil, lifetime: .zero) { written in
                results.value.withLock { $0 = written }
                return StoredResponse(status: 200, headers: [], body: Data())
            }
        } catch let failure as RecordBatchFailure {
            if failure.index == 0 { throw failure.error }
            logger.error(
                "a write joined by a record hook failed; nothing was written",
                metadata: ["index": "\(failure.index)", "error": "\(failure.error)"])
            throw ServerError(
                .internalServerError, code: "hook_failed",
                message: "A server hook's own write failed, so this write did not happen either. Try again later")
        }
        guard let first = results.value.withLock({ $0.first }) else {
            throw ServerError(.internalServerError, code: "hook_failed", message: "The write did not happen; try again")
        }
        return first
    }

    /// Deletes `record` at its version, with the writes its hooks joined in the same transaction.
    ///
    /// - Throws: ``RecordWriteFailure`` when the record is gone or at another version.
    func delete(_ record: StoredRecord, joined: [RecordBatchWrite], logger: Logger) async throws {
        if joined.isEmpty {
            return try await storage.deleteRecord(type: record.type, id: record.id, expectedVersion: record.version)
        }
        let version = record.version
        let delete = RecordBatchWrite.delete(type: record.type, id: record.id) { now in
            guard now.version == version else { throw RecordWriteFailure.versionMismatch(current: now.version) }
        }
        _ = try await commit([delete] + joined, logger: logger)
    }

    /// The results a transaction wrote, handed out of its closure.
    final class ResultBox: Sendable {
        let value = Mutex<[RecordBatchResult]>([])
    }

    /// Updates a record: `change` computes its new fields from the current record (and checks the
    /// rules), the before hooks run on them, and the write commits only if the record is still the
    /// version the hooks saw; otherwise everything runs again on the new version. Without before
    /// hooks the storage does it in one transaction.
    ///
    /// - Throws: ``RecordWriteFailure`` as ``RecordStorage/updateRecord(type:id:expectedVersion:_:)``
    ///   does; 409 `record_busy` when the record kept changing.
    func update(
        type: String, id: String, expectedVersion: Int?, caller: RuleCaller?, identity: CallerIdentity?, logger: Logger,
        change: @escaping @Sendable (StoredRecord) throws -> [String: JSONValue]
    ) async throws -> StoredRecord {
        if hooks.before(.update, on: type).isEmpty {
            return try await storage.updateRecord(type: type, id: id, expectedVersion: expectedVersion, change)
        }
        for _ in 1...Self.updateAttempts {
            guard let current = try await storage.record(type: type, id: id) else { throw RecordWriteFailure.notFound }
            if let expectedVersion, expectedVersion != current.version {
                throw RecordWriteFailure.versionMismatch(current: current.version)
            }
            let prepared = try await before(
                .update, type: type, id: id, fields: try change(current), current: try current.fields, caller: caller,
                identity: identity, logger: logger)
            let fields = prepared.fields
            do {
                if !prepared.joined.isEmpty {
                    let version = current.version
                    let update = RecordBatchWrite.update(type: type, id: id) { now in
                        guard now.version == version else { throw RecordWriteFailure.versionMismatch(current: now.version) }
                        _ = try change(now)
                        return fields
                    }
                    guard case .updated(let record) = try await commit([update] + prepared.joined, logger: logger) else {
                        throw RecordWriteFailure.notFound
                    }
                    return record
                }
                return try await storage.updateRecord(type: type, id: id, expectedVersion: current.version) { now in
                    // The same version: the rules decide as they did above.
                    _ = try change(now)
                    return fields
                }
            } catch RecordWriteFailure.versionMismatch(let version) where expectedVersion == nil {
                logger.debug("record changed under its hooks; running them again", metadata: ["version": "\(version)"])
                continue
            }
        }
        throw ServerError(
            .conflict, code: "record_busy", message: "Record \(type)/\(id) kept changing while it was being written; try again")
    }

    /// The data API for a caller (`nil`: the server itself).
    func data(caller: RuleCaller?, identity: CallerIdentity?) -> RecordData {
        RecordData(actions: self, actor: caller.map { .caller($0, identity) } ?? .server)
    }
}
