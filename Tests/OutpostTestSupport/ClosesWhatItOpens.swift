import OutpostSupport
package import Testing

/// Fails a suite (or a test) that leaves open a database connection, a PostgreSQL pool or a
/// running server it opened: each holds threads, and a test process that leaks them by the hundred
/// runs out of them (CI's test process once crashed with over a thousand idle pool threads).
///
/// The suite runs with a tally of its own bound to its task (``OpenResources/current``, inherited
/// by its tests, their child tasks and their `Task {}` work); once every test has finished, the
/// tally must be back at zero.
package struct ClosesWhatItOpens: SuiteTrait, TestTrait, TestScoping {
    package init() {}

    package var isRecursive: Bool { false }

    package func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        let tally = OpenResources()
        try await OpenResources.$current.withValue(tally) {
            try await function()
        }
        #expect(
            tally.open == 0,
            "\(test.name) left \(tally.open) connection(s), pool(s) or server(s) open: close every storage, stop every server it starts"
        )
    }
}

extension Trait where Self == ClosesWhatItOpens {
    /// Checks that the suite or test closes every storage and stops every server it opens.
    package static var closesWhatItOpens: Self { ClosesWhatItOpens() }
}
