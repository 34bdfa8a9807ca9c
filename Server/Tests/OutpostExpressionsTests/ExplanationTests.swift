import OutpostExpressions
import Testing

@Suite("Explanations")
struct ExplanationTests {
    static let environment = ExpressionEnvironment([
        "caller": ["user": "u2", "roles": ["editor"]],
        "record": ["owner": "u1", "long": .string(String(repeating: "x", count: 500))],
    ])

    @Test("each operator with its operands' values, outermost first")
    func trace() throws {
        let explanation = try parse("record.owner == caller.user || \"admin\" in caller.roles")
            .explain(in: Self.environment)
        #expect(!explanation.decision)
        #expect(explanation.value == false)
        #expect(explanation.error == nil)
        #expect(
            explanation.description == """
                deny
                record.owner == caller.user || "admin" in caller.roles → false || false → false
                  record.owner == caller.user → "u1" == "u2" → false
                  "admin" in caller.roles → "admin" in ["editor"] → false
                """)
    }

    @Test("skipped operands are shown as …; ! shows its operand")
    func shortCircuitAndNot() throws {
        let explanation = try parse("!(record.owner == caller.user) && record.missing == null || false")
            .explain(in: Self.environment)
        #expect(explanation.decision)
        #expect(
            explanation.steps.map(\.description) == [
                "!(record.owner == caller.user) && record.missing == null || false → true || … → true",
                "  !(record.owner == caller.user) && record.missing == null → true && true → true",
                "    !(record.owner == caller.user) → !false → true",
                "      record.owner == caller.user → \"u1\" == \"u2\" → false",
                "    record.missing == null → null == null → true",
            ])
    }

    @Test("a whole expression that is a value still gets a step")
    func leaf() throws {
        let explanation = try parse("caller.roles").explain(in: Self.environment)
        #expect(!explanation.decision)
        #expect(explanation.description == "deny\ncaller.roles → [\"editor\"]")
    }

    @Test("long values and sources are shortened, and steps are capped")
    func bounded() throws {
        let long = try parse("record.long == \"y\"").explain(in: Self.environment)
        let line = try #require(long.steps.first?.description)
        #expect(line.count < 120)
        #expect(line.contains("…"))

        let chain = Array(repeating: "record.owner == \"u0\"", count: 120).joined(separator: " || ")
        let many = try parse("false || " + chain, limits: .init(maxDepth: 200, maxNodes: 1000))
        let explanation = many.explain(in: Self.environment)
        #expect(explanation.steps.count == 100)
        #expect(explanation.omittedSteps > 0)
        #expect(explanation.description.hasSuffix("… \(explanation.omittedSteps) more steps"))
        #expect(explanation.steps[0].expression.hasSuffix("…"))
        #expect(explanation.steps[0].expression.count <= 121)
    }

    @Test("an exceeded budget denies and says why")
    func budget() throws {
        let explanation = try parse("record.owner == caller.user").explain(in: Self.environment, budget: 2)
        #expect(!explanation.decision)
        #expect(explanation.value == nil)
        #expect(explanation.error?.code == .evaluationBudgetExceeded)
        #expect(explanation.description.hasPrefix("deny: evaluating the expression needs more than 2 steps"))
        #expect(explanation.steps.first?.value == nil)
        #expect(explanation.steps.first?.description.hasSuffix("(not finished)") == true)
    }
}
