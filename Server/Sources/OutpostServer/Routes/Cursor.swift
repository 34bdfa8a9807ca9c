import Crypto
import Foundation
@_spi(OutpostInternal) import OutpostSupport
import Synchronization

/// Opaque, tamper-evident list cursors.
///
/// A cursor is `base64url(payload) + "." + base64url(HMAC-SHA256(payload)[0..<16])`. The payload
/// names the list it belongs to (type, sort, filters), the direction, and the position (for a list
/// ordered by fields, the record's values under its keys), so a cursor
/// altered by hand, or reused on another list, is refused with 400 `invalid_cursor`.
struct CursorCodec: Sendable {
    struct Payload: Codable, Hashable {
        /// The list: type, sort and filters, as a canonical string.
        var list: String
        /// `n`ext (after the position) or `p`revious (before it).
        var direction: String
        var time: Int64
        var seq: Int64
        /// In a list ordered by fields: the record's values under the order's keys (`time` and
        /// `seq` are 0).
        var values: [RecordOrderValue]? = nil
    }

    let secret: Data
    /// HMAC-SHA256 (RFC 2104) keyed once: the inner and outer hashes with their padded key blocks
    /// already absorbed, copied for each cursor. swift-crypto's `HMAC.update(data:)` goes through
    /// `DataProtocol` regions unspecialized, about a third of a cursor's cost; SHA256's
    /// `update(bufferPointer:)` does not. Cursors are made and checked with it (a test compares it
    /// with `HMAC<SHA256>`).
    let inner: SHA256
    let outer: SHA256
    /// Cursors made lately, by payload: every request for a list's first page asks for the same
    /// `next` cursor until the list changes, and a cursor is a pure function of its payload and
    /// the key (so any instance makes the same one). Bounded: emptied when it holds
    /// ``CursorCache/capacity`` cursors.
    let made = CursorCache()

    init(secret: Data) {
        self.secret = secret
        (inner, outer) = Self.keyedHashes(secret)
    }

    /// SHA256 after `key ^ ipad` and after `key ^ opad` (a key longer than a block is hashed first).
    static func keyedHashes(_ secret: Data) -> (inner: SHA256, outer: SHA256) {
        let blockSize = SHA256.blockByteCount
        var block = secret.count > blockSize ? Array(SHA256.hash(data: secret)) : Array(secret)
        block += Array(repeating: 0, count: blockSize - block.count)
        var inner = SHA256()
        var outer = SHA256()
        block.map { $0 ^ 0x36 }.withUnsafeBytes { inner.update(bufferPointer: $0) }
        block.map { $0 ^ 0x5c }.withUnsafeBytes { outer.update(bufferPointer: $0) }
        return (inner, outer)
    }

    /// The HMAC-SHA256 of `bytes` with this codec's key: what `HMAC<SHA256>.authenticationCode` gives.
    func authenticationCode(_ bytes: UnsafeRawBufferPointer) -> SHA256Digest {
        var inner = self.inner
        inner.update(bufferPointer: bytes)
        var outer = self.outer
        inner.finalize().withUnsafeBytes { outer.update(bufferPointer: $0) }
        return outer.finalize()
    }

    func encode(_ payload: Payload) -> String {
        var out: [UInt8] = []
        append(payload, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// ``encode(_:)`` appended to `out`: the payload's JSON and its tag written as bytes, with no
    /// intermediate strings (two cursors are on every keyset page).
    func append(_ payload: Payload, to out: inout [UInt8]) {
        if let cursor = made.cursor(for: payload) {
            out.append(contentsOf: cursor)
            return
        }
        var cursor: [UInt8] = []
        make(payload, to: &cursor)
        made.keep(cursor, for: payload)
        out.append(contentsOf: cursor)
    }

    /// The cursor of `payload`, computed: its JSON, then the HMAC's first 16 bytes.
    func make(_ payload: Payload, to out: inout [UInt8]) {
        // Written by hand (sorted keys, as JSONEncoder would) and read back by JSONDecoder in decode.
        var json: [UInt8] = []
        json.reserveCapacity(payload.list.utf8.count + 72)
        json.append(contentsOf: #"{"direction":"#.utf8)
        JSONText.appendQuoted(payload.direction, to: &json)
        json.append(contentsOf: #","list":"#.utf8)
        JSONText.appendQuoted(payload.list, to: &json)
        json.append(contentsOf: #","seq":"#.utf8)
        json.append(contentsOf: String(payload.seq).utf8)
        json.append(contentsOf: #","time":"#.utf8)
        json.append(contentsOf: String(payload.time).utf8)
        if let values = payload.values {
            json.append(contentsOf: #","values":["#.utf8)
            for (index, value) in values.enumerated() {
                if index > 0 { json.append(UInt8(ascii: ",")) }
                json.append(contentsOf: #"{"n":""#.utf8)
                json.append(contentsOf: String(value.number.bitPattern).utf8)
                json.append(contentsOf: #"","r":"#.utf8)
                json.append(contentsOf: String(value.rank).utf8)
                json.append(contentsOf: #","t":"#.utf8)
                JSONText.appendQuoted(value.text, to: &json)
                json.append(UInt8(ascii: "}"))
            }
            json.append(UInt8(ascii: "]"))
        }
        json.append(UInt8(ascii: "}"))
        let mac = json.withUnsafeBytes { authenticationCode($0) }
        Base64URL.append(json, to: &out)
        out.append(UInt8(ascii: "."))
        mac.withUnsafeBytes { Base64URL.append($0.prefix(16), to: &out) }
    }

    /// The payload, when the cursor is intact and was made for `list`.
    func decode(_ cursor: String, list: String) throws -> Payload {
        let parts = cursor.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let data = Base64URL.decode(parts[0]).map({ Data($0) }),
            let tag = Base64URL.decode(parts[1]).map({ Data($0) })
        else {
            throw Self.invalid
        }
        let expected = Data(data.withUnsafeBytes { authenticationCode($0) }.prefix(16))
        // Constant-time comparison: the time taken says nothing about how much of the tag matched.
        guard tag.count == expected.count, zip(tag, expected).reduce(0, { $0 | ($1.0 ^ $1.1) }) == 0 else {
            throw Self.invalid
        }
        guard let payload = try? JSONDecoder().decode(Payload.self, from: data), payload.list == list,
            payload.direction == "n" || payload.direction == "p"
        else {
            throw Self.invalid
        }
        return payload
    }

    static let invalid = ServerError.badRequest(
        "invalid_cursor", "The cursor is not one this server gave for this list; start again from the first page (omit cursor)")
}

/// The cursors a ``CursorCodec`` made lately, by payload (at most ``capacity``; all are dropped
/// when it is full, so a burst of new positions costs one refill, not a slower lookup).
final class CursorCache: Sendable {
    static let capacity = 512
    private let cursors = Mutex<[CursorCodec.Payload: [UInt8]]>([:])

    func cursor(for payload: CursorCodec.Payload) -> [UInt8]? {
        cursors.withLock { $0[payload] }
    }

    func keep(_ cursor: [UInt8], for payload: CursorCodec.Payload) {
        cursors.withLock { cursors in
            if cursors.count >= Self.capacity { cursors.removeAll(keepingCapacity: true) }
            cursors[payload] = cursor
        }
    }

    var count: Int { cursors.withLock { $0.count } }
}
