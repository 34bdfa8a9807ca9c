@_spi(OutpostInternal) import OutpostSupport

/// An answer to an x-callback-url request, and the callback URL it opens.
///
/// Building rules: new parameters go before any `#fragment`; `?` is added when the base has no
/// query, nothing when its query is empty or ends in `&`, `&` otherwise; the existing query is
/// kept byte for byte; names and values are percent-encoded as UTF-8, all but `A-Z a-z 0-9 - . _ ~`,
/// with upper-case hex. An error carries `errorCode` then `errorMessage`; a cancellation opens
/// its URL unchanged; an empty base URL means there is nothing to open.
public enum CallbackAnswer: Sendable {
    /// Success, with parameters appended in this order (a success without parameters opens
    /// the `x-success` URL unchanged).
    case success(parameters: [(name: String, value: String)])
    /// Failure: `errorCode` and `errorMessage` are appended.
    case error(code: String, message: String)
    /// Cancellation: the `x-cancel` URL is opened unchanged.
    case cancel

    /// The callback URL that answering opens, or `nil` when `base` is empty.
    public func url(base: String) -> String? {
        guard !base.isEmpty else { return nil }
        switch self {
        case .success(let parameters):
            return Self.appending(parameters, to: base)
        case .error(let code, let message):
            return Self.appending([("errorCode", code), ("errorMessage", message)], to: base)
        case .cancel:
            return base
        }
    }

    /// Appends percent-encoded parameters to `base` following the building rules.
    static func appending(_ parameters: [(name: String, value: String)], to base: String) -> String {
        guard !parameters.isEmpty else { return base }
        let encoded =
            parameters
            .map { PercentEncoding.encode($0.name) + "=" + PercentEncoding.encode($0.value) }
            .joined(separator: "&")
        let utf8 = base.utf8
        let fragmentStart = utf8.firstIndex(of: UInt8(ascii: "#")) ?? utf8.endIndex
        let beforeFragment = utf8[utf8.startIndex..<fragmentStart]
        let separator: String
        if let questionMark = beforeFragment.firstIndex(of: UInt8(ascii: "?")) {
            let query = beforeFragment[beforeFragment.index(after: questionMark)...]
            separator = (query.isEmpty || query.last == UInt8(ascii: "&")) ? "" : "&"
        } else {
            separator = "?"
        }
        let head = String(base[base.startIndex..<fragmentStart])
        let fragment = String(base[fragmentStart...])
        return head + separator + encoded + fragment
    }
}
