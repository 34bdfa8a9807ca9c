@_spi(OutpostInternal) public import OutpostCore

extension UserCompliance {
    /// Completion-handler form of the async `isCompliant(policies:)`.
    /// The handler runs on an arbitrary thread.
    @discardableResult
    public func isCompliant(
        policies: [String: JSONValue], completion: @escaping @Sendable (Result<Bool, any Error>) -> Void
    ) -> Task<Void, Never> {
        Task {
            do {
                let answer: Bool = try await isCompliant(policies: policies)
                completion(.success(answer))
            } catch {
                completion(.failure(error))
            }
        }
    }
}
