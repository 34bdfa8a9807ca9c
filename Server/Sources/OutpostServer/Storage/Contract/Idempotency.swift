public import Foundation
@_spi(OutpostInternal) public import OutpostCore

/// One `Idempotency-Key` as the server keeps it: whose it is, the key, and what the first request
/// with it looked like.
public struct IdempotencyKey: Sendable, Hashable {
    /// `user:<id>`, `client:<id>` (a token without a user), or `anonymous`: every caller without a
    /// token shares the one `anonymous` namespace.
    public var caller: String
    public var key: String
    /// SHA-256 (hex) of the method, the path with its query, and the body.
    public var fingerprint: String

    public init(caller: String, key: String, fingerprint: String) {
        self.caller = caller
        self.key = key
        self.fingerprint = fingerprint
    }
}

/// A response kept to answer a repeat of the request that produced it.
public struct StoredResponse: Sendable, Equatable {
    public var status: Int
    /// The header fields to replay, in order (Content-Type, Location, ETag, a handler's own).
    public var headers: [[String]]
    public var body: Data

    public init(status: Int, headers: [[String]], body: Data) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// What a request with a key finds.
public enum IdempotencyClaim: Sendable, Equatable {
    /// The key is this request's to use; finish with `completeIdempotencyKey` or `releaseIdempotencyKey`.
    case claimed(token: String)
    /// An earlier request with the key finished: answer with its response.
    case replay(StoredResponse)
    /// An earlier request with the key is still running.
    case inProgress
    /// The key was first used for another request (another method, path or body).
    case mismatch
}

/// Idempotency keys: the first response per (caller, key), kept for a while, shared by every
/// server on the database.
public protocol IdempotencyStorage: Sendable {
    /// Creates a record and stores the response `respond` makes for it under `key`, in one
    /// transaction; or, when the key is known, creates nothing and says what it holds.
    func createRecord(
        type: String, fields: [String: JSONValue], owner: String?, isPrivate: Bool, key: IdempotencyKey,
        lifetime: Duration,
        respond: @Sendable (StoredRecord) -> StoredResponse
    ) async throws -> (claim: IdempotencyClaim, response: StoredResponse?)
    /// Claims `key` for a request about to run; an earlier claim whose `lease` ran out (its server
    /// stopped mid-request) may be taken over.
    func claimIdempotencyKey(_ key: IdempotencyKey, lease: Duration, lifetime: Duration) async throws -> IdempotencyClaim
    /// Stores the response of a claimed key.
    func completeIdempotencyKey(_ key: IdempotencyKey, token: String, response: StoredResponse, lifetime: Duration)
        async throws
    /// Gives a claimed key up (the request failed), so a retry runs afresh.
    func releaseIdempotencyKey(_ key: IdempotencyKey, token: String) async throws
}
