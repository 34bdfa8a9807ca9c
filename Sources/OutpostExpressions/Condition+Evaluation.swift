extension Condition {
    /// The evaluation budget used when none is given: 10 000 steps.
    public static let defaultEvaluationBudget = 10_000

    /// Evaluates the expression, reading paths from `context`.
    ///
    /// Each node is evaluated at most once, and `&&` and `||` skip their right operand when the left
    /// one decides. Every node evaluated and every pair of values compared (elements of arrays and
    /// objects included, so `in` costs one step per element it looks at) is a step.
    ///
    /// - Parameters:
    ///   - context: what the expression's paths read.
    ///   - budget: the most steps to take.
    /// - Throws: ``ExpressionError/Code/evaluationBudgetExceeded`` when evaluation needs more steps.
    public func evaluate(in context: some ExpressionContext, budget: Int = defaultEvaluationBudget)
        throws(ExpressionError) -> ExpressionValue
    {
        var evaluator = ExpressionEvaluator(context: context, budget: budget, trace: nil)
        return try evaluator.evaluate(node, level: 0)
    }

    /// Whether the expression grants: `true` only when it evaluates to exactly `true`.
    ///
    /// Any other value (`false`, `null`, a number, a string…) and an exceeded budget are `false`, so
    /// a rule that is wrong or too costly denies rather than grants.
    public func decide(in context: some ExpressionContext, budget: Int = defaultEvaluationBudget) -> Bool {
        (try? evaluate(in: context, budget: budget)) == .bool(true)
    }

    /// Evaluates the expression as ``decide(in:budget:)`` does, recording the value of each operator
    /// on the way for a person to read, such as an operator checking why a rule denied.
    public func explain(in context: some ExpressionContext, budget: Int = defaultEvaluationBudget)
        -> ExpressionExplanation
    {
        var evaluator = ExpressionEvaluator(context: context, budget: budget, trace: ExpressionTrace())
        do {
            let value = try evaluator.evaluate(node, level: 0)
            return ExpressionExplanation(
                decision: value == .bool(true), value: value, error: nil, steps: evaluator.trace!.steps,
                omittedSteps: evaluator.trace!.omitted)
        } catch {
            return ExpressionExplanation(
                decision: false, value: nil, error: error, steps: evaluator.trace!.steps,
                omittedSteps: evaluator.trace!.omitted)
        }
    }
}

/// The steps an explanation collects, bounded in number and in the length of each text.
struct ExpressionTrace {
    static let maxSteps = 100
    static let maxSourceCharacters = 120
    static let maxValueCharacters = 60

    var steps: [ExpressionExplanation.Step] = []
    var omitted = 0

    /// Reserves the next step, so that steps come out outermost first; `nil` past the limit.
    mutating func reserve(_ node: Condition.Node, level: Int) -> Int? {
        guard steps.count < Self.maxSteps else {
            omitted += 1
            return nil
        }
        var source = ""
        node.write(to: &source)
        if source.count > Self.maxSourceCharacters {
            source = String(source.prefix(Self.maxSourceCharacters)) + "…"
        }
        steps.append(ExpressionExplanation.Step(level: level, expression: source, operands: nil, value: nil))
        return steps.count - 1
    }

    static func render(_ value: ExpressionValue) -> String {
        var renderer = ExpressionValueRenderer(limit: maxValueCharacters)
        renderer.render(value)
        return renderer.output
    }
}

/// Evaluates nodes against a context within a step budget, optionally recording a trace.
struct ExpressionEvaluator<Context: ExpressionContext> {
    let context: Context
    let budget: Int
    private var remaining: Int
    private(set) var trace: ExpressionTrace?

    init(context: Context, budget: Int, trace: ExpressionTrace?) {
        self.context = context
        self.budget = budget
        self.remaining = budget
        self.trace = trace
    }

    private mutating func charge(_ steps: Int) throws(ExpressionError) {
        remaining -= steps
        if remaining < 0 {
            throw ExpressionError(
                code: .evaluationBudgetExceeded,
                message: "evaluating the expression needs more than \(budget) steps; compare against shorter "
                    + "lists or arrays, or simplify the expression")
        }
    }

    /// Evaluates `node`; `level` is its depth in the tree, the root being 0.
    mutating func evaluate(_ node: Condition.Node, level: Int) throws(ExpressionError) -> ExpressionValue {
        try charge(1)
        switch node {
        case .null: return record(node, level: level, value: .null)
        case .bool(let flag): return record(node, level: level, value: .bool(flag))
        case .number(let number): return record(node, level: level, value: .number(number))
        case .string(let text): return record(node, level: level, value: .string(text))
        case .path(let path): return record(node, level: level, value: context.value(at: path))
        case .list(let elements):
            let slot = level == 0 ? trace?.reserve(node, level: level) : nil
            var values: [ExpressionValue] = []
            values.reserveCapacity(elements.count)
            for element in elements { values.append(try evaluate(element, level: level + 1)) }
            let value = ExpressionValue.array(values)
            fill(slot, operands: nil, value: value)
            return value
        case .not(let operand):
            let slot = trace?.reserve(node, level: level)
            let value = try evaluate(operand, level: level + 1)
            let result: ExpressionValue =
                switch value {
                case .bool(let flag): .bool(!flag)
                default: .null
                }
            fill(slot, operands: "!" + ExpressionTrace.render(value), value: result)
            return result
        case .binary(let op, let left, let right):
            let slot = trace?.reserve(node, level: level)
            let leftValue = try evaluate(left, level: level + 1)
            let rightValue: ExpressionValue?
            let result: Bool
            switch op {
            case .and:
                rightValue = leftValue == .bool(true) ? try evaluate(right, level: level + 1) : nil
                result = rightValue == .bool(true)
            case .or:
                rightValue = leftValue == .bool(true) ? nil : try evaluate(right, level: level + 1)
                result = leftValue == .bool(true) || rightValue == .bool(true)
            default:
                let value = try evaluate(right, level: level + 1)
                rightValue = value
                result = try compare(op, leftValue, value)
            }
            if slot != nil {
                let operands =
                    "\(ExpressionTrace.render(leftValue)) \(op.rawValue) \(rightValue.map(ExpressionTrace.render) ?? "…")"
                fill(slot, operands: operands, value: .bool(result))
            }
            return .bool(result)
        }
    }

    /// Records a leaf only when it is the whole expression; operators show their operands' values.
    private mutating func record(_ node: Condition.Node, level: Int, value: ExpressionValue) -> ExpressionValue {
        if level == 0, let slot = trace?.reserve(node, level: level) {
            fill(slot, operands: nil, value: value)
        }
        return value
    }

    private mutating func fill(_ slot: Int?, operands: String?, value: ExpressionValue) {
        guard let slot else { return }
        trace?.steps[slot].operands = operands
        trace?.steps[slot].value = value
    }

    // MARK: - Operators

    private mutating func compare(_ op: Condition.BinaryOperator, _ left: ExpressionValue, _ right: ExpressionValue)
        throws(ExpressionError) -> Bool
    {
        switch op {
        case .equal: return try equal(left, right)
        case .notEqual: return try !equal(left, right)
        case .in:
            guard case .array(let elements) = right else { return false }
            for element in elements {
                if try equal(left, element) { return true }
            }
            return false
        case .startsWith:
            guard case .string(let text) = left, case .string(let prefix) = right else { return false }
            try charge(1)
            return text.utf8.starts(with: prefix.utf8)
        case .less, .lessOrEqual, .greater, .greaterOrEqual:
            try charge(1)
            let order: Int
            switch (left, right) {
            case (.number(let a), .number(let b)):
                guard !a.isNaN, !b.isNaN else { return false }
                order = a < b ? -1 : (a == b ? 0 : 1)
            case (.string(let a), .string(let b)):
                // UTF-8 byte order is Unicode scalar order.
                order = a.utf8.lexicographicallyPrecedes(b.utf8) ? -1 : (a.utf8.elementsEqual(b.utf8) ? 0 : 1)
            default:
                return false
            }
            switch op {
            case .less: return order < 0
            case .lessOrEqual: return order <= 0
            case .greater: return order > 0
            default: return order >= 0
            }
        case .and, .or:
            return false
        }
    }

    /// Same type and value; strings by their Unicode scalars, without normalization. Works through
    /// nested arrays and objects with its own stack, one step per pair of values.
    private mutating func equal(_ left: ExpressionValue, _ right: ExpressionValue) throws(ExpressionError) -> Bool {
        var pending = [(left, right)]
        try charge(1)
        while let (a, b) = pending.popLast() {
            switch (a, b) {
            case (.null, .null): continue
            case (.bool(let x), .bool(let y)): if x != y { return false }
            case (.number(let x), .number(let y)): if x != y { return false }
            case (.string(let x), .string(let y)): if !x.utf8.elementsEqual(y.utf8) { return false }
            case (.array(let x), .array(let y)):
                guard x.count == y.count else { return false }
                try charge(x.count)
                for index in x.indices.reversed() { pending.append((x[index], y[index])) }
            case (.object(let x), .object(let y)):
                guard x.count == y.count else { return false }
                try charge(x.count)
                for (key, value) in x {
                    guard let other = y[key] else { return false }
                    pending.append((value, other))
                }
            default:
                return false
            }
        }
        return true
    }
}
