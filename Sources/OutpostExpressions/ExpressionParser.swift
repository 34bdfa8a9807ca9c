/// A recursive-descent parser over ``ExpressionLexer``'s tokens.
///
/// ```
/// expression = and { "||" and }
/// and        = comparison { "&&" comparison }
/// comparison = unary [ ("==" | "!=" | "<" | "<=" | ">" | ">=" | "in" | "^=") unary ]
/// unary      = { "!" } primary
/// primary    = "null" | "true" | "false" | number | string | path | list | "(" expression ")"
/// list       = "[" [ expression { "," expression } ] "]"
/// ```
///
/// One token of look-ahead, no backtracking: parsing is linear in the tokens. Recursion happens only
/// through `(`, `[` and `!`, each of which counts towards ``ExpressionLimits/maxDepth`` before
/// recursing, so the stack stays shallow whatever the input.
struct ExpressionParser {
    private var lexer: ExpressionLexer
    private let roots: Set<String>
    private let limits: ExpressionLimits
    private var token: ExpressionToken
    private var previous: ExpressionToken?
    private var nodeCount = 0
    /// Open parentheses, lists and `!` around the current point.
    private var nesting = 0

    private init(lexer: ExpressionLexer, roots: Set<String>, limits: ExpressionLimits) {
        self.lexer = lexer
        self.roots = roots
        self.limits = limits
        self.token = ExpressionToken(kind: .end, start: 0, end: 0)
    }

    /// A parsed node and its height: how many levels it nests, itself included.
    private typealias Parsed = (node: Condition.Node, height: Int)

    static func parse(_ source: String, roots: Set<String>, limits: ExpressionLimits) throws(ExpressionError)
        -> Condition.Node
    {
        let byteCount = source.utf8.count
        if byteCount > limits.maxSourceBytes {
            let position = ExpressionError.Position(offset: limits.maxSourceBytes, in: source)
            throw ExpressionError(
                code: .tooLong,
                message: "the expression is \(byteCount) bytes long, more than the limit of \(limits.maxSourceBytes) "
                    + "(reached at column \(position.column)); shorten it, e.g. with 'x in [...]' instead of many '||'",
                position: position)
        }
        var parser = ExpressionParser(lexer: ExpressionLexer(source: source), roots: roots, limits: limits)
        try parser.advance()
        if parser.token.kind == .end {
            throw parser.lexer.error(.emptyExpression, at: 0) { _ in
                "the expression is empty; write a condition such as record.status == \"open\""
            }
        }
        let parsed = try parser.expression()
        guard parser.token.kind == .end else { throw parser.trailingTokenError() }
        return parsed.node
    }

    // MARK: - Grammar

    private mutating func expression() throws(ExpressionError) -> Parsed {
        var left = try and()
        while token.kind == .binary(.or) {
            let op = token
            try advance()
            let right = try and()
            left = try binary(.or, left, right, at: op)
        }
        return left
    }

    private mutating func and() throws(ExpressionError) -> Parsed {
        var left = try comparison()
        while token.kind == .binary(.and) {
            let op = token
            try advance()
            let right = try comparison()
            left = try binary(.and, left, right, at: op)
        }
        return left
    }

    private mutating func comparison() throws(ExpressionError) -> Parsed {
        let left = try unary()
        guard case .binary(let op) = token.kind, op.isComparison else { return left }
        let opToken = token
        try advance()
        let right = try unary()
        if case .binary(let next) = token.kind, next.isComparison {
            throw lexer.error(.chainedComparison, at: token.start) { column in
                "'\(next.rawValue)' at column \(column) follows another comparison; comparisons do not chain: "
                    + "join them with && (a < b && b < c) or group one with parentheses"
            }
        }
        return try binary(op, left, right, at: opToken)
    }

    private mutating func unary() throws(ExpressionError) -> Parsed {
        var operators: [ExpressionToken] = []
        while token.kind == .not {
            try enter(token)
            operators.append(token)
            try advance()
        }
        var parsed = try primary()
        for op in operators.reversed() {
            parsed = try node(.not(parsed.node), height: parsed.height + 1, at: op)
        }
        nesting -= operators.count
        return parsed
    }

    private mutating func primary() throws(ExpressionError) -> Parsed {
        let start = token
        switch token.kind {
        case .null, .true, .false, .number, .string:
            let literal: Condition.Node =
                switch token.kind {
                case .true: .bool(true)
                case .false: .bool(false)
                case .number(let number): .number(number)
                case .string(let text): .string(text)
                default: .null
                }
            try advance()
            return try node(literal, height: 1, at: start)
        case .path(let components):
            guard roots.contains(components[0]) else { throw unknownRoot(components[0], at: start) }
            guard components.count <= limits.maxPathComponents else {
                throw lexer.error(.pathTooLong, at: start.start) { column in
                    "the path at column \(column) has \(components.count) names, more than the limit of "
                        + "\(limits.maxPathComponents); use a shorter path"
                }
            }
            try advance()
            let path = ExpressionPath(root: components[0], keys: Array(components.dropFirst()))
            return try node(.path(path), height: 1, at: start)
        case .leftParen:
            try enter(start)
            try advance()
            let inner = try expression()
            guard token.kind == .rightParen else {
                throw expected("')' to close the '(' at column \(column(of: start))", hint: "add ')'")
            }
            try advance()
            nesting -= 1
            return try checkHeight((inner.node, inner.height + 1), at: start)
        case .leftBracket:
            return try list()
        default:
            throw expected(
                "a value",
                hint: "write a string, number, true, false, null, a list or a path such as \(examplePath)")
        }
    }

    private mutating func list() throws(ExpressionError) -> Parsed {
        let open = token
        try enter(open)
        try advance()
        var elements: [Condition.Node] = []
        var height = 1
        if token.kind != .rightBracket {
            while true {
                if elements.count == limits.maxListElements {
                    throw lexer.error(.tooManyElements, at: token.start) { column in
                        "the list opened at column \(self.column(of: open)) has more than \(limits.maxListElements) "
                            + "elements (at column \(column)); use a shorter list"
                    }
                }
                let element = try expression()
                elements.append(element.node)
                height = max(height, element.height + 1)
                if token.kind == .comma {
                    try advance()
                } else if token.kind == .rightBracket {
                    break
                } else {
                    throw expected(
                        "',' or ']' in the list opened at column \(column(of: open))", hint: "separate elements with ','")
                }
            }
        }
        try advance()
        nesting -= 1
        return try node(.list(elements), height: height, at: open)
    }

    // MARK: - Building and bounds

    private mutating func binary(
        _ op: Condition.BinaryOperator, _ left: Parsed, _ right: Parsed, at opToken: ExpressionToken
    ) throws(ExpressionError) -> Parsed {
        try node(.binary(op, left.node, right.node), height: max(left.height, right.height) + 1, at: opToken)
    }

    /// Counts a new node and checks its height.
    private mutating func node(_ node: Condition.Node, height: Int, at token: ExpressionToken) throws(ExpressionError)
        -> Parsed
    {
        nodeCount += 1
        if nodeCount > limits.maxNodes {
            throw lexer.error(.tooManyNodes, at: token.start) { column in
                "the expression has more than \(limits.maxNodes) values, paths and operators (at column \(column)); "
                    + "shorten it, e.g. with 'x in [...]' instead of many '||'"
            }
        }
        return try checkHeight((node, height), at: token)
    }

    private func checkHeight(_ parsed: Parsed, at token: ExpressionToken) throws(ExpressionError) -> Parsed {
        if parsed.height > limits.maxDepth { throw tooDeep(at: token) }
        return parsed
    }

    /// Counts an opening `(`, `[` or `!` before recursing into it.
    private mutating func enter(_ token: ExpressionToken) throws(ExpressionError) {
        nesting += 1
        if nesting >= limits.maxDepth { throw tooDeep(at: token) }
    }

    private func tooDeep(at token: ExpressionToken) -> ExpressionError {
        lexer.error(.tooDeep, at: token.start) { column in
            "the expression nests deeper than \(limits.maxDepth) levels at column \(column); "
                + "remove parentheses or '!', or split the condition"
        }
    }

    // MARK: - Tokens and messages

    private mutating func advance() throws(ExpressionError) {
        previous = token
        token = try lexer.next()
    }

    private func column(of token: ExpressionToken) -> Int {
        ExpressionError.Position(offset: token.start, in: lexer.source).column
    }

    private var examplePath: String {
        roots.contains("record") || roots.isEmpty ? "record.status" : "\(roots.sorted()[0]).status"
    }

    private func describe(_ token: ExpressionToken) -> String {
        token.kind == .end ? "the end of the expression" : "'\(lexer.text(of: token))'"
    }

    /// "expected WHAT after 'PREVIOUS' at column N, found FOUND; HINT", at the found token.
    private func expected(_ what: String, hint: String) -> ExpressionError {
        let after = previous.map { $0.kind == .end ? "" : " after '\(lexer.text(of: $0))'" } ?? ""
        return lexer.error(.unexpectedToken, at: token.start) { column in
            "expected \(what)\(after) at column \(column), found \(describe(token)); \(hint)"
        }
    }

    private func trailingTokenError() -> ExpressionError {
        if token.kind == .rightParen {
            return lexer.error(.unexpectedToken, at: token.start) { column in
                "unmatched ')' at column \(column); remove it or add a '(' before it"
            }
        }
        return lexer.error(.unexpectedToken, at: token.start) { column in
            "unexpected \(describe(token)) at column \(column) after a complete expression; "
                + "join conditions with && or ||, or compare with an operator such as =="
        }
    }

    private func unknownRoot(_ root: String, at token: ExpressionToken) -> ExpressionError {
        let allowed = roots.sorted()
        return lexer.error(.unknownRoot, at: token.start) { column in
            if allowed.isEmpty {
                return "unknown name '\(root)' at column \(column); no paths are allowed here, only literal values"
            }
            return "unknown name '\(root)' at column \(column); paths start with "
                + (allowed.count == 1 ? "\(allowed[0])" : "one of: \(allowed.joined(separator: ", "))")
                + ", e.g. \(examplePath)"
        }
    }
}
