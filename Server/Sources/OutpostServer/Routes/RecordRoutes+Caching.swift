import Crypto
import Foundation
import HTTPTypes
import Hummingbird
@_spi(OutpostInternal) import OutpostCore
@_spi(OutpostInternal) import OutpostSupport

/// What caches may do with record reads: `Cache-Control: private, max-age=0` (a client's own cache
/// may keep a copy but must revalidate it before every use, and may show it, marked stale, when the
/// server is unreachable; shared caches must not keep it, as the answer depends on who asks), an ETag
/// on every record and list page, and `Last-Modified` on records. `If-None-Match` (or, without it,
/// `If-Modified-Since`) answers `304 Not Modified` when nothing changed.
extension RecordRoutes {
    static let readCacheControl = "private, max-age=0"

    /// The header fields of a record read (and of its 304).
    static func readHeaders(_ record: StoredRecord) -> HTTPFields {
        var fields = HTTPFields()
        fields.reserveCapacity(4)
        fields.append(HTTPField(name: .eTag, value: record.etag))
        fields.append(HTTPField(name: .cacheControl, value: readCacheControl))
        fields.append(
            HTTPField(
                name: .lastModified, value: HTTPDate.format(Date(timeIntervalSince1970: TimeInterval(record.updatedAt / 1000)))))
        return fields
    }

    /// `304 Not Modified` when the request's validators match `record` (RFC 9110 §13.2.2:
    /// `If-Modified-Since` counts only without `If-None-Match`), else `nil`.
    static func notModified(_ request: Request, record: StoredRecord) -> Response? {
        if request.headers.contains(.ifNoneMatch), let condition = request.headers[.ifNoneMatch] {
            guard matches(condition, etag: record.etag, weak: true) else { return nil }
        } else if request.headers.contains(.ifModifiedSince), let since = HTTPDate.parse(request.headers[.ifModifiedSince]) {
            guard record.updatedAt / 1000 <= Int64(since.timeIntervalSince1970) else { return nil }
        } else {
            return nil
        }
        return Response(status: .notModified, headers: readHeaders(record))
    }

    /// The header fields of a list page with this (weak) ETag.
    static func listHeaders(etag: String) -> HTTPFields {
        // Appended: a dictionary literal checks each name against the others first.
        var fields = HTTPFields()
        fields.reserveCapacity(3)
        fields.append(HTTPField(name: .eTag, value: etag))
        fields.append(HTTPField(name: .cacheControl, value: readCacheControl))
        return fields
    }

    /// A list page's weak ETag, from what determines its text for one URL: each record's id and
    /// version (any change to a record bumps its version) and the page info's bytes (links, cursors,
    /// totals). A digest of these few hundred bytes instead of the whole page.
    static func listETag(_ keys: RecordPageText.Keys, info: ArraySlice<UInt8>) -> String {
        var hash = SHA256()
        // The ids and versions, gathered as the page was read (``RecordPageText/Keys``), hashed at
        // once; `update(bufferPointer:)`: `update(data:)` walks `DataProtocol` regions unspecialized.
        keys.bytes.withUnsafeBytes { hash.update(bufferPointer: $0) }
        info.withUnsafeBytes { hash.update(bufferPointer: $0) }
        var tag = Array("W/\"".utf8)
        tag.reserveCapacity(28)
        hash.finalize().withUnsafeBytes { Hex.append($0.prefix(12), to: &tag) }
        tag.append(UInt8(ascii: "\""))
        return String(decoding: tag, as: UTF8.self)
    }

    /// A list page, or `304 Not Modified` when the request's `If-None-Match` names its ETag.
    static func conditionalList(_ response: Response, request: Request) -> Response {
        // `contains` first: reading a field by name joins its values, and most requests have none.
        guard request.headers.contains(.ifNoneMatch), response.status == .ok, let etag = response.headers[.eTag],
            let condition = request.headers[.ifNoneMatch], matches(condition, etag: etag, weak: true)
        else { return response }
        return Response(status: .notModified, headers: [.eTag: etag, .cacheControl: readCacheControl])
    }
}
