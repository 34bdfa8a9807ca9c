@_spi(OutpostInternal) import OutpostCore
import OutpostExpressions

/// `?filter=EXPR` on lists: an expression of the rules' language over `record.*` (docs/PROTOCOL.md,
/// "Lists"), translated into a ``RecordPredicate`` the storage adds to the list's query.
struct ListFilter: Sendable {
    /// The parsed expression; its canonical source names the list in cursors.
    var condition: Condition
    var predicate: RecordPredicate

    /// A filter reads the record only: the caller is already in the access rules, and a list has no body.
    static let roots: Set<String> = ["record"]
    /// The most tests and operators the translated filter may hold. The translation can repeat a
    /// part (`x == null` on a negation asks both of its truth values), so it is bounded apart from
    /// the expression's own limits.
    static let maxPredicateSize = 1024

    /// Parses and translates `source`; 400 `invalid_filter` with the error's code and position.
    init(parsing source: String) throws {
        do {
            condition = try Condition(parsing: source, roots: Self.roots)
        } catch {
            var details: [String: JSONValue] = ["code": .string(error.code.rawValue)]
            if let position = error.position {
                details["offset"] = .int(position.offset)
                details["column"] = .int(position.column)
            }
            // caller and request belong to access rules: say why they are refused here.
            let hint =
                error.code == .unknownRoot
                ? " (a list filter reads the record only; who may see what is decided by the type's access rules)" : ""
            throw ServerError.badRequest(
                "invalid_filter", "The filter does not parse: \(error.message)\(hint)", details: .object(details))
        }
        do {
            predicate = try RecordPredicate.compile(condition, caller: .anonymous)
        } catch {
            throw ServerError.badRequest(
                "invalid_filter",
                "The filter cannot select records: '\(error.part)' is not supported in a filter. Compare record.<field>, "
                    + "record.id or record.owner with literal values (==, !=, <, <=, >, >=, ^= for a string prefix, in a list), "
                    + "joined by &&, || and !; comparing two fields, record.created_at, record.updated_at and x in record.<field> "
                    + "are not supported",
                details: ["code": .string("unsupported_expression")])
        }
        guard Self.size(of: predicate, budget: Self.maxPredicateSize) != nil else {
            throw ServerError.badRequest(
                "invalid_filter",
                "The filter is too complex to run as a query (more than \(Self.maxPredicateSize) tests once translated); "
                    + "simplify it, e.g. fewer comparisons with null of negated parts",
                details: ["code": .string("too_complex")])
        }
    }

    /// The number of nodes of `predicate` written out, or `nil` past `budget`. It stops at the
    /// budget, so it costs at most that much even when shared parts would expand far beyond it.
    static func size(of predicate: RecordPredicate, budget: Int) -> Int? {
        var remaining = budget
        var stack = [predicate]
        while let next = stack.popLast() {
            remaining -= 1
            if remaining < 0 { return nil }
            switch next {
            case .constant, .test: break
            case .not(let a): stack.append(a)
            case .and(let a, let b), .or(let a, let b): stack += [a, b]
            }
        }
        return budget - remaining
    }
}
