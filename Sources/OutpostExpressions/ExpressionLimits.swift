/// Bounds on the source the parser accepts. Exceeding one is an ``ExpressionError``.
///
/// The defaults suit rules and filters written by people; raise them only for trusted input.
public struct ExpressionLimits: Sendable, Hashable {
    /// The longest source, in UTF-8 bytes. Default 4096.
    public var maxSourceBytes: Int
    /// The deepest nesting: each parenthesis, list, `!` and binary operator adds a level on the way
    /// from the whole expression to its innermost value, which is a level too. Default 32.
    public var maxDepth: Int
    /// The most nodes: literals, paths, lists and operators. Default 256.
    public var maxNodes: Int
    /// The most elements in one list literal. Default 100.
    public var maxListElements: Int
    /// The most names in one path, the root included. Default 8.
    public var maxPathComponents: Int

    /// Creates limits; each parameter defaults to the documented default.
    public init(
        maxSourceBytes: Int = 4096, maxDepth: Int = 32, maxNodes: Int = 256, maxListElements: Int = 100,
        maxPathComponents: Int = 8
    ) {
        self.maxSourceBytes = maxSourceBytes
        self.maxDepth = maxDepth
        self.maxNodes = maxNodes
        self.maxListElements = maxListElements
        self.maxPathComponents = maxPathComponents
    }
}
