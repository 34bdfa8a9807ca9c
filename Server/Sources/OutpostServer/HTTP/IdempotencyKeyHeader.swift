import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
@_spi(OutpostInternal) import OutpostCore

/// `Idempotency-Key` on POST (draft-ietf-httpapi-idempotency-key-header): the first response per
/// (caller, key) is kept for ``lifetime`` and answered again, with `Idempotency-Replayed: true`, to
/// a repeat. See docs/PROTOCOL.md, "Idempotent requests".
enum Idempotency {
    static let header = HTTPField.Name("Idempotency-Key")!
    static let replayedHeader = HTTPField.Name("Idempotency-Replayed")!
    /// How long a key and its response are kept.
    static let lifetime = Duration.seconds(86_400)
    static let maxKeyLength = 255

    /// The request's key: `nil` without the header; 400 `invalid_idempotency_key` unless it is
    /// 1–255 printable ASCII characters (a structured-field string's quotes are removed).
    static func key(of request: Request) throws -> String? {
        let values = request.headers[values: header]
        guard let raw = values.first else { return nil }
        var text = Substring(raw.trimmingCharacters(in: .whitespaces))
        if text.count >= 2, text.hasPrefix("\""), text.hasSuffix("\"") { text = text.dropFirst().dropLast() }
        guard values.count == 1, (1...maxKeyLength).contains(text.utf8.count),
            text.utf8.allSatisfy({ $0 >= 0x20 && $0 <= 0x7E })
        else {
            throw ServerError.badRequest(
                "invalid_idempotency_key",
                "Idempotency-Key must be one value of 1–\(maxKeyLength) printable ASCII characters, e.g. a UUID")
        }
        return String(text)
    }

    /// Whose namespace a key lives in.
    static func caller(_ caller: AuthenticatedCaller?) -> String {
        guard let caller else { return "anonymous" }
        if let user = caller.userID { return "user:\(user)" }
        return "client:\(caller.clientID)"
    }

    /// SHA-256 of the method, the path with its query, and the body.
    static func fingerprint(_ request: Request, body: Data) -> String {
        var hasher = SHA256()
        hasher.update(data: Data(request.method.rawValue.utf8))
        hasher.update(data: [0])
        hasher.update(data: Data(request.uri.description.utf8))
        hasher.update(data: [0])
        hasher.update(data: body)
        return Secrets.hex(hasher.finalize())
    }

    /// Whether a response is kept for the key. Failures a retry may cure (5xx, 408, 409, 429) are
    /// not: the key is given up so the retry runs afresh.
    static func keeps(_ status: Int) -> Bool {
        status < 500 && status != 408 && status != 409 && status != 429
    }

    /// The response to answer with.
    static func response(_ stored: StoredResponse, replayed: Bool) -> Response {
        var fields = HTTPFields()
        for pair in stored.headers where pair.count == 2 {
            if let name = HTTPField.Name(pair[0]) { fields.append(HTTPField(name: name, value: pair[1])) }
        }
        if replayed { fields[replayedHeader] = "true" }
        return Response(
            status: HTTPResponse.Status(code: stored.status), headers: fields,
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: stored.body)))
    }

    static func stored(status: HTTPResponse.Status, headers: HTTPFields, body: Data) -> StoredResponse {
        StoredResponse(status: status.code, headers: headers.map { [$0.name.canonicalName, $0.value] }, body: body)
    }

    /// What a key that cannot be used now answers.
    static func failure(_ claim: IdempotencyClaim) -> ServerError? {
        switch claim {
        case .claimed, .replay: return nil
        case .inProgress:
            return ServerError(
                .conflict, code: "idempotency_in_progress",
                message: "A request with this Idempotency-Key is still running; retry after it finishes",
                headers: [.retryAfter: "1"])
        case .mismatch:
            return ServerError(
                .unprocessableContent, code: "idempotency_key_reused",
                message:
                    "This Idempotency-Key was used for a different request (method, path or body); use a new key for a new request"
            )
        }
    }
}

extension Request {
    /// Parses a body already read with ``collectBody(limit:)`` as JSON, as ``decodeJSON(limit:maxDepth:)`` does.
    ///
    /// An object with more than `maxKeys` keys is 400 `too_many_keys`; with `exactNumbers` (record
    /// bodies, which are stored), a number that would not read back with its written value is 400
    /// `invalid_number`. Both name the place in the body as a JSON Pointer, found in the one parse.
    static func parseJSON(
        _ data: Data, maxDepth: Int, maxKeys: Int = ServerConfiguration.defaultMaxJSONKeys, exactNumbers: Bool = false
    ) throws -> JSONValue {
        if data.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) { return .null }
        if JSONValue.nestingDepth(of: data, stoppingAfter: maxDepth) > maxDepth {
            throw ServerError.badRequest(
                "json_too_deep",
                "The request body nests arrays and objects deeper than \(maxDepth) levels, the server's limit; flatten it",
                details: ["max_depth": .int(maxDepth)])
        }
        do {
            return try JSONValue(
                parsing: data,
                limits: JSONParsingLimits(maxDepth: maxDepth, maxKeysPerObject: maxKeys, exactNumbers: exactNumbers))
        } catch let limit as JSONLimitExceeded {
            throw Self.refusal(limit)
        } catch {
            throw ServerError.badRequest(
                "malformed_json",
                "The request body is not valid JSON: \(Self.reason(error)); send a JSON document with Content-Type: application/json"
            )
        }
    }

    /// 400 `too_many_keys` or `invalid_number`, with `details.field` the JSON Pointer of the place.
    static func refusal(_ limit: JSONLimitExceeded) -> ServerError {
        let field = limit.pointer
        let place = field.isEmpty ? "the body itself" : "'\(field)'"
        switch limit.reason {
        case .tooManyKeys(let maxKeys):
            return ServerError.badRequest(
                "too_many_keys",
                "The object at \(place) has more than \(maxKeys) keys, the server's limit per object; "
                    + "split it into smaller objects or records",
                details: ["field": .string(field), "max_keys": .int(maxKeys)])
        case .inexactNumber(let text):
            let shown = text.count > 40 ? String(text.prefix(40)) + "…" : text
            return ServerError.badRequest(
                "invalid_number",
                "The number \(shown) at \(place) cannot be stored exactly: numbers are kept as integers within a 64-bit "
                    + "float's range or as 64-bit floats (at most 17 significant digits); send it as a JSON string to keep every digit",
                details: ["field": .string(field)])
        }
    }
}
