import PostgresNIO

extension PostgresStorage {
    /// `predicate` as PostgreSQL SQL that is true or false, never `NULL`, over `body_json`; values
    /// and paths are bound.
    ///
    /// A field's type comes from `jsonb_typeof` (`NULL` when missing); strings compare with
    /// `COLLATE "C"` (UTF-8 bytes: code-point order, as the evaluator compares them); a number is
    /// read as `float8` only inside a `CASE` that checked its type first.
    static func accessSQL(_ predicate: RecordPredicate, into statement: inout PostgresStatement) -> String {
        switch predicate {
        case .constant(let flag): return flag ? "TRUE" : "FALSE"
        case .and(let a, let b):
            return "(\(accessSQL(a, into: &statement)) AND \(accessSQL(b, into: &statement)))"
        case .or(let a, let b):
            return "(\(accessSQL(a, into: &statement)) OR \(accessSQL(b, into: &statement)))"
        case .not(let a): return "(NOT \(accessSQL(a, into: &statement)))"
        case .test(let column, let test): return "COALESCE(\(testSQL(column, test, into: &statement)), FALSE)"
        }
    }

    private static func testSQL(_ column: RecordColumn, _ test: RecordTest, into statement: inout PostgresStatement)
        -> String
    {
        switch column {
        case .isPrivate:
            switch test {
            case .isTrue: return "private"
            case .isFalse: return "NOT private"
            default: return "FALSE"
            }
        case .owner, .id:
            let name = column == .owner ? "owner" : "id"
            switch test {
            case .isNull: return "\(name) IS NULL"
            case .equalsString(let text): return "\(name) = " + statement.bind(text)
            case .compareString(let op, let text):
                return "\(name) COLLATE \"C\" \(op.rawValue) " + statement.bind(text) + "::text COLLATE \"C\""
            case .startsWith(let prefix): return "starts_with(\(name), " + statement.bind(prefix) + "::text)"
            default: return "FALSE"
            }
        case .field(let keys):
            func json() -> String { "(body_json #> " + statement.bind(keys) + "::text[])" }
            func text() -> String { "(body_json #>> " + statement.bind(keys) + "::text[])" }
            switch test {
            case .isNull:
                return "(jsonb_typeof(\(json())) IS NULL OR jsonb_typeof(\(json())) = 'null')"
            case .isTrue: return "\(json()) = 'true'::jsonb"
            case .isFalse: return "\(json()) = 'false'::jsonb"
            case .equalsString(let value):
                return "(jsonb_typeof(\(json())) = 'string' AND \(text()) = " + statement.bind(value) + "::text)"
            case .compareString(let op, let value):
                return "(jsonb_typeof(\(json())) = 'string' AND \(text()) COLLATE \"C\" \(op.rawValue) "
                    + statement.bind(value) + "::text COLLATE \"C\")"
            case .startsWith(let prefix):
                return "(jsonb_typeof(\(json())) = 'string' AND starts_with(\(text()), " + statement.bind(prefix) + "::text))"
            case .equalsNumber(let number):
                return "(CASE WHEN jsonb_typeof(\(json())) = 'number' THEN \(text())::float8 = "
                    + statement.bind(number) + "::float8 ELSE FALSE END)"
            case .compareNumber(let op, let number):
                return "(CASE WHEN jsonb_typeof(\(json())) = 'number' THEN \(text())::float8 \(op.rawValue) "
                    + statement.bind(number) + "::float8 ELSE FALSE END)"
            }
        }
    }
}
