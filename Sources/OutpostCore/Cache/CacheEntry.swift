import Foundation
import HTTPTypes
@_spi(OutpostInternal) import OutpostSupport

/// One stored response: its status, header fields and body, when it was requested and received,
/// and the hashed values of the request fields its `Vary` names.
struct CacheEntry: Sendable {
    var status: Int
    /// The response's header fields, in order.
    var headerFields: HTTPFields
    var body: Data
    /// When the request that produced this response (or its last revalidation) was sent.
    var requestTime: Date
    /// When that response arrived.
    var responseTime: Date
    /// For each field the response's `Vary` names (lowercased), a hash of the request's value
    /// (`nil` when the request had none): the request fields are never stored in clear.
    var varying: [String: String?]
    /// `Vary: *`: no later request can be matched to this response without asking the server.
    var variesOnEverything: Bool

    /// Bounds on what `Vary` may name.
    static let maxVaryFields = 32

    init(
        status: Int, headers: [[String]], body: Data, requestTime: Date, responseTime: Date, varying: [String: String?]
    ) {
        self.status = status
        var fields = HTTPFields()
        for pair in headers where pair.count == 2 {
            guard let name = HTTPField.Name(pair[0]) else { continue }
            fields.append(HTTPField(name: name, value: pair[1]))
        }
        self.headerFields = fields
        self.body = body
        self.requestTime = requestTime
        self.responseTime = responseTime
        self.varying = varying
        self.variesOnEverything = false
    }

    init(
        response: HTTPResponse, body: Data, request: HTTPRequest, requestTime: Date, responseTime: Date
    ) {
        self.status = response.status.code
        var fields = response.headerFields
        // A cookie set for the session is the session's business, not the cache's.
        fields[.setCookie] = nil
        self.headerFields = fields
        self.body = body
        self.requestTime = requestTime
        self.responseTime = responseTime
        let (names, star) = Self.varyNames(response.headerFields)
        self.variesOnEverything = star
        var varying: [String: String?] = [:]
        for name in names { varying[name] = Self.selectingValue(request, name) }
        self.varying = varying
    }

    /// The fields as name/value pairs, for the entry file.
    var headers: [[String]] { headerFields.map { [$0.name.canonicalName, $0.value] } }

    var directives: CacheDirectives { CacheDirectives(headerFields) }

    /// The bytes this entry takes, roughly: body, header text and bookkeeping.
    var cost: Int { body.count + headerFields.reduce(0) { $0 + $1.name.rawName.utf8.count + $1.value.utf8.count + 8 } + 128 }

    /// The field names of `Vary`, lowercased, and whether it holds `*`; a `Vary` naming more than
    /// ``maxVaryFields`` fields counts as `*`.
    static func varyNames(_ fields: HTTPFields) -> (names: [String], star: Bool) {
        var names: [String] = []
        var star = false
        for line in fields[values: HTTPField.Name("Vary")!] {
            for part in line.split(separator: ",") {
                let name = part.trimmingCharacters(in: .whitespaces).lowercased()
                if name == "*" { star = true } else if !name.isEmpty { names.append(name) }
                if names.count > maxVaryFields { return (names, true) }
            }
        }
        return (names, star)
    }

    /// A hash of the request's values of `name`, normalised as RFC 9111 §4.1 allows (whitespace
    /// around commas), or `nil` when the request has none.
    static func selectingValue(_ request: HTTPRequest, _ name: String) -> String? {
        guard let field = HTTPField.Name(name) else { return nil }
        let values = request.headerFields[values: field]
        guard !values.isEmpty else { return nil }
        let normalised = values.joined(separator: ",").split(separator: ",").map {
            $0.trimmingCharacters(in: .whitespaces)
        }.joined(separator: ",")
        return SHA256Digest.hex(name + ":" + normalised)
    }

    /// Whether `request` selects this stored response (RFC 9111 §4.1).
    func matches(_ request: HTTPRequest) -> Bool {
        guard !variesOnEverything else { return false }
        for (name, stored) in varying where Self.selectingValue(request, name) != stored { return false }
        return true
    }

    // MARK: Freshness (RFC 9111 §4.2)

    /// How long the response is fresh for, in seconds: `max-age` (a private cache ignores
    /// `s-maxage`), else `Expires` − `Date`, else a tenth of the time since `Last-Modified` (at most
    /// a day) for statuses cacheable by default, else zero.
    var freshnessLifetime: TimeInterval {
        let fields = headerFields
        let directives = CacheDirectives(fields)
        if let maxAge = directives.maxAge { return TimeInterval(maxAge) }
        let date = HTTPDate.parse(fields[.date]) ?? responseTime
        if let expires = fields[.expires] {
            // An invalid Expires (e.g. "0") means: already expired.
            guard let expiry = HTTPDate.parse(expires) else { return 0 }
            return max(0, expiry.timeIntervalSince(date))
        }
        if Self.heuristicallyCacheable.contains(status), let modified = HTTPDate.parse(fields[.lastModified]) {
            return min(86_400, max(0, date.timeIntervalSince(modified) / 10))
        }
        return 0
    }

    /// The response's age now, in seconds (RFC 9111 §4.2.3).
    func currentAge(now: Date) -> TimeInterval {
        let fields = headerFields
        let ageValue = fields[.age].flatMap { CacheDirectives.seconds($0) }.map(TimeInterval.init) ?? 0
        let dateValue = HTTPDate.parse(fields[.date]) ?? responseTime
        let apparentAge = max(0, responseTime.timeIntervalSince(dateValue))
        let responseDelay = max(0, responseTime.timeIntervalSince(requestTime))
        let correctedInitialAge = max(apparentAge, ageValue + responseDelay)
        return correctedInitialAge + max(0, now.timeIntervalSince(responseTime))
    }

    func isFresh(now: Date) -> Bool { freshnessLifetime > currentAge(now: now) }

    /// `ETag` and `Last-Modified`, the validators a revalidation sends back.
    var etag: String? { headerFields[.eTag] }
    var lastModified: String? { headerFields[.lastModified] }
    var hasValidator: Bool { etag != nil || lastModified != nil }

    /// Statuses a cache may store without explicit freshness (RFC 9110 §15.1).
    static let heuristicallyCacheable: Set<Int> = [200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501]

    /// The entry after a 304: its header fields updated with the 304's (RFC 9111 §3.2), except the
    /// framing ones, and its clock restarted.
    func refreshed(with notModified: HTTPResponse, requestTime: Date, responseTime: Date) -> CacheEntry {
        var fields = headerFields
        let skipped: Set<HTTPField.Name> = [.contentLength, .contentEncoding, .transferEncoding, .contentRange]
        var replaced = Set<HTTPField.Name>()
        for field in notModified.headerFields where !skipped.contains(field.name) {
            if replaced.insert(field.name).inserted { fields[field.name] = nil }
            fields.append(field)
        }
        var copy = self
        copy.headerFields = fields
        copy.requestTime = requestTime
        copy.responseTime = responseTime
        return copy
    }
}
