import Foundation
@_spi(OutpostInternal) import OutpostCore
@_spi(OutpostInternal) import OutpostSupport

/// A stored `Idempotency-Key` row as every backend reads it, and the rules for what it means.
struct IdempotencyRow: Sendable {
    var fingerprint: String
    var state: String
    var claim: String
    var lockedUntil: Int64
    var response: StoredResponse?

    /// What a row means for `key`, and whether it is an in-progress claim whose lease ran out.
    static func classify(_ row: IdempotencyRow, key: IdempotencyKey, now: Int64) -> (claim: IdempotencyClaim, stale: Bool) {
        guard row.fingerprint == key.fingerprint else { return (.mismatch, false) }
        if row.state == "done", let response = row.response { return (.replay(response), false) }
        return (.inProgress, row.lockedUntil < now)
    }

    static func milliseconds(_ duration: Duration) -> Int64 {
        duration.inMilliseconds
    }

    /// The stored form of a response's header fields: a JSON array of `[name, value]` pairs.
    static func headerText(_ headers: [[String]]) -> String {
        JSONValue.array(headers.map { .array($0.map(JSONValue.string)) }).jsonString()
    }

    static func headers(fromText text: String) -> [[String]] {
        guard case .array(let pairs)? = try? JSONValue(parsing: Data(text.utf8)) else { return [] }
        return pairs.compactMap { pair in
            guard case .array(let parts) = pair else { return nil }
            let strings = parts.compactMap(\.stringValue)
            return strings.count == 2 ? strings : nil
        }
    }
}
