@_spi(OutpostInternal) public import OutpostCore

/// Decides whether the current user may have something: play an item, open a screen.
///
/// The policies are a JSON object of context, e.g. `{"item_id": "42", "free": false,
/// "entitlement": "premium", "playable_items": [...]}`; which keys matter is the checker's business.
///
/// There are two forms. The synchronous one answers at once from what the checker already knows
/// (a cache, a local rule) and must not block on the network; the async one may ask a server. In an
/// async context Swift picks the async form; call the synchronous one from synchronous code.
public protocol UserCompliance: Sendable {
    /// Answers at once, from what the checker already knows; `false` when it cannot tell.
    func isCompliant(policies: [String: JSONValue]) -> Bool
    /// Answers, asking a server if need be.
    /// - Throws: ``PluginError`` with ``PluginError/Code/complianceCheckFailed`` when no answer could be had.
    func isCompliant(policies: [String: JSONValue]) async throws -> Bool
}
