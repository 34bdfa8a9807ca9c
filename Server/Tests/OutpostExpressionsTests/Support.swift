import OutpostExpressions

/// The roots most tests parse with.
let allRoots: Set<String> = ["caller", "record", "request"]

/// Parses with all roots and the given limits.
func parse(_ source: String, limits: ExpressionLimits = .init()) throws(ExpressionError) -> Condition {
    try Condition(parsing: source, roots: allRoots, limits: limits)
}

/// The error parsing `source` throws, or `nil` when it parses.
func parsingError(_ source: String, roots: Set<String> = allRoots, limits: ExpressionLimits = .init())
    -> ExpressionError?
{
    do {
        _ = try Condition(parsing: source, roots: roots, limits: limits)
        return nil
    } catch {
        return error
    }
}

/// A path node from dotted text.
func path(_ dotted: String) -> Condition.Node {
    let names = dotted.split(separator: ".").map(String.init)
    return .path(ExpressionPath(root: names[0], keys: Array(names.dropFirst())))
}

/// SplitMix64: a small deterministic generator, so fuzz runs repeat exactly.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
