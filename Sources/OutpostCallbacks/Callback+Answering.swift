import Foundation

extension Callback {
    /// Answers success: opens `x-success` with `additionalParameters` appended, in order.
    ///
    /// - Returns: Whether a URL was opened: `false` when there is no `x-success`, when the
    ///   built URL is not a valid `URL`, or when the opener failed.
    @discardableResult
    public func succeed(additionalParameters: [(name: String, value: String)] = []) async -> Bool {
        await answer(.success(parameters: additionalParameters))
    }

    /// Answers success with parameters given as a dictionary; they are appended sorted by name.
    @discardableResult
    public func succeed(additionalParameters: [String: String]) async -> Bool {
        let sorted = additionalParameters.sorted { $0.key < $1.key }.map { (name: $0.key, value: $0.value) }
        return await answer(.success(parameters: sorted))
    }

    /// Answers failure: opens `x-error` with `errorCode` then `errorMessage` appended.
    ///
    /// - Returns: Whether a URL was opened (`false` when there is no `x-error`).
    @discardableResult
    public func fail(code: String, message: String) async -> Bool {
        await answer(.error(code: code, message: message))
    }

    /// Answers cancellation: opens `x-cancel` unchanged.
    ///
    /// - Returns: Whether a URL was opened (`false` when there is no `x-cancel`).
    @discardableResult
    public func cancel() async -> Bool {
        await answer(.cancel)
    }

    /// The callback URL `answer` would open, or `nil` when this callback has no URL for it.
    public func url(for answer: CallbackAnswer) -> String? {
        let base: String?
        switch answer {
        case .success: base = successURL
        case .error: base = errorURL
        case .cancel: base = cancelURL
        }
        guard let base else { return nil }
        return answer.url(base: base)
    }

    /// Opens the callback URL for `answer`; see ``succeed(additionalParameters:)-5383j``.
    @discardableResult
    public func answer(_ answer: CallbackAnswer) async -> Bool {
        guard let text = url(for: answer), let url = URL(string: text) else { return false }
        return await opener.open(url)
    }
}
