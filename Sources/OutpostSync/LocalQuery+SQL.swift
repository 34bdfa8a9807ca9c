import GRDB
import OutpostExpressions

/// The part of a local filter SQLite can narrow with an index: the comparisons at the top level of
/// an `&&` chain between a field and a literal (`==`, `<`, `<=`, `>`, `>=`, `in` of literals,
/// and `^=` as `>=` its prefix). Each term selects a superset of the records the expression
/// selects (SQLite orders numbers before text and reads JSON booleans as 0 and 1, where the
/// expression language compares only like with like), so the evaluator still decides every row
/// read; the terms only spare it the rows they rule out.
struct LocalPrefilter {
    var sql: String = ""
    var arguments: StatementArguments = []

    init(_ condition: Condition?) {
        guard let condition else { return }
        var terms: [String] = []
        for conjunct in Self.conjuncts(condition.node) {
            if let term = Self.term(conjunct, arguments: &arguments) { terms.append(term) }
        }
        sql = terms.map { " AND " + $0 }.joined()
    }

    /// The SQL expression of a record's top-level field, as a local index spells it (SQLite uses
    /// an index on an expression only for the identical expression, so the path is a literal).
    static func column(_ field: String) -> String {
        field == "id" ? "id" : "json_extract(fields, '$.\"\(field)\"')"
    }

    private static func conjuncts(_ node: Condition.Node) -> [Condition.Node] {
        if case .binary(.and, let left, let right) = node { return conjuncts(left) + conjuncts(right) }
        return [node]
    }

    private static func field(_ node: Condition.Node) -> String? {
        guard case .path(let path) = node, path.root == "record", path.keys.count == 1,
            let field = path.keys.first, RecordNames.isValid(field)
        else { return nil }
        return field
    }

    private static func literal(_ node: Condition.Node) -> DatabaseValue? {
        switch node {
        case .number(let number): number.databaseValue
        case .string(let string): string.databaseValue
        default: nil
        }
    }

    private static func term(_ node: Condition.Node, arguments: inout StatementArguments) -> String? {
        guard case .binary(var op, var left, var right) = node else { return nil }
        if field(left) == nil, field(right) != nil {
            // `10 < record.views` is `record.views > 10`.
            let flipped: [Condition.BinaryOperator: Condition.BinaryOperator] = [
                .equal: .equal, .less: .greater, .lessOrEqual: .greaterOrEqual, .greater: .less, .greaterOrEqual: .lessOrEqual,
            ]
            guard let turned = flipped[op] else { return nil }
            (op, left, right) = (turned, right, left)
        }
        guard let name = field(left) else { return nil }
        let column = column(name)
        if op == .in {
            guard case .list(let elements) = right, !elements.isEmpty, elements.count <= 100 else { return nil }
            let values = elements.compactMap(literal)
            guard values.count == elements.count else { return nil }
            _ = arguments.append(contentsOf: StatementArguments(values))
            return "\(column) IN (\(Array(repeating: "?", count: values.count).joined(separator: ", ")))"
        }
        guard let value = literal(right) else { return nil }
        let sqlOperator: String
        switch op {
        case .equal: sqlOperator = "="
        case .less: sqlOperator = "<"
        case .lessOrEqual: sqlOperator = "<="
        case .greater: sqlOperator = ">"
        case .greaterOrEqual: sqlOperator = ">="
        case .startsWith:
            guard case .string = right else { return nil }
            sqlOperator = ">="
        default: return nil
        }
        _ = arguments.append(contentsOf: [value])
        return "\(column) \(sqlOperator) ?"
    }
}
