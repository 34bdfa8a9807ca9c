/// What an expression's paths read when it is evaluated.
///
/// A server implements this over the caller, the stored record and the request; a local store over
/// its rows. ``ExpressionEnvironment`` is a ready implementation over plain values.
public protocol ExpressionContext: Sendable {
    /// The value at `path`, or ``ExpressionValue/null`` when there is none.
    func value(at path: ExpressionPath) -> ExpressionValue
}
