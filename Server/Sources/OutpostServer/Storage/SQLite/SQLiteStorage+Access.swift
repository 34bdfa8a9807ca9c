import SQLiteNIO

extension SQLiteStorage {
    /// `predicate` as SQLite SQL that is 1 or 0, never `NULL`; values and JSON paths are bound.
    ///
    /// A field's type comes from `json_type` (`text`, `integer`, `real`, `true`, `false`, `null`,
    /// `array`, `object`, `NULL` when missing); strings compare with the BINARY collation (UTF-8
    /// bytes, which is code-point order, as the evaluator compares them).
    static func accessSQL(_ predicate: RecordPredicate, binds: inout [SQLiteData]) -> String {
        switch predicate {
        case .constant(let flag): return flag ? "1" : "0"
        case .and(let a, let b): return "(\(accessSQL(a, binds: &binds)) AND \(accessSQL(b, binds: &binds)))"
        case .or(let a, let b): return "(\(accessSQL(a, binds: &binds)) OR \(accessSQL(b, binds: &binds)))"
        case .not(let a): return "(NOT \(accessSQL(a, binds: &binds)))"
        case .test(let column, let test): return "COALESCE(\(testSQL(column, test, binds: &binds)), 0)"
        }
    }

    private static func testSQL(_ column: RecordColumn, _ test: RecordTest, binds: inout [SQLiteData]) -> String {
        switch column {
        case .isPrivate:
            switch test {
            case .isTrue: return "private != 0"
            case .isFalse: return "private = 0"
            default: return "0"
            }
        case .owner, .id:
            let name = column == .owner ? "owner" : "id"
            switch test {
            case .isNull: return "\(name) IS NULL"
            case .equalsString(let text):
                binds.append(.text(text))
                return "\(name) = ?"
            case .compareString(let op, let text):
                binds.append(.text(text))
                return "\(name) \(op.rawValue) ?"
            case .startsWith(let prefix) where prefix.isEmpty:
                // SQLite binds an empty blob as NULL, so the empty prefix is a presence test.
                return "\(name) IS NOT NULL"
            case .startsWith(let prefix):
                binds += [.integer(prefix.utf8.count), .blob(.init(bytes: Array(prefix.utf8)))]
                return "substr(CAST(\(name) AS BLOB), 1, ?) = ?"
            default: return "0"
            }
        case .field(let keys):
            let path = "$" + keys.map { ".\"\($0)\"" }.joined()
            func type() -> String {
                binds.append(.text(path))
                return "json_type(body, ?)"
            }
            func value() -> String {
                binds.append(.text(path))
                return "json_extract(body, ?)"
            }
            switch test {
            case .isNull:
                let first = type()
                return "(\(first) IS NULL OR \(type()) = 'null')"
            case .isTrue: return "\(type()) = 'true'"
            case .isFalse: return "\(type()) = 'false'"
            case .equalsString(let text):
                let sql = "(\(type()) = 'text' AND \(value()) = ?)"
                binds.append(.text(text))
                return sql
            case .equalsNumber(let number):
                let sql = "(\(type()) IN ('integer', 'real') AND \(value()) = ?)"
                binds.append(.float(number))
                return sql
            case .compareString(let op, let text):
                let sql = "(\(type()) = 'text' AND \(value()) \(op.rawValue) ?)"
                binds.append(.text(text))
                return sql
            case .compareNumber(let op, let number):
                let sql = "(\(type()) IN ('integer', 'real') AND \(value()) \(op.rawValue) ?)"
                binds.append(.float(number))
                return sql
            case .startsWith(let prefix) where prefix.isEmpty:
                // Every string starts with the empty prefix (whose empty blob SQLite would bind as NULL).
                return "\(type()) = 'text'"
            case .startsWith(let prefix):
                let sql = "(\(type()) = 'text' AND substr(CAST(\(value()) AS BLOB), 1, ?) = ?)"
                binds += [.integer(prefix.utf8.count), .blob(.init(bytes: Array(prefix.utf8)))]
                return sql
            }
        }
    }
}
