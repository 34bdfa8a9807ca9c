import Synchronization

/// A count of the resources that hold threads or connections (a SQLite connection and its thread,
/// a PostgreSQL connection pool, a running server) that were opened and not closed yet.
///
/// Each opening counts in the process's tally (``process``) and in the tally of the task that
/// opened it, when one is bound with ``current`` (task-local, so it follows child tasks and
/// unstructured `Task {}` work, and counts per test even when tests run in parallel). A test binds
/// a fresh tally around what it runs and checks that it is back at zero afterwards: a helper that
/// forgets to close a storage or stop a server fails it.
@_spi(OutpostInternal) public final class OpenResources: Sendable {
    private let count = Atomic<Int>(0)

    @_spi(OutpostInternal) public init() {}

    /// Resources opened under this tally and not closed yet.
    @_spi(OutpostInternal) public var open: Int { count.load(ordering: .acquiring) }

    /// The tally of the current task, if one is bound.
    @TaskLocal @_spi(OutpostInternal) public static var current: OpenResources?

    /// Every resource of the process opened and not closed yet.
    @_spi(OutpostInternal) public static let process = OpenResources()

    /// Counts one opening in the process's tally and the current task's; closing the returned
    /// handle takes it back (once, however often it is called).
    @_spi(OutpostInternal) public static func opened() -> Opened {
        let scope = current
        process.count.add(1, ordering: .acquiringAndReleasing)
        scope?.count.add(1, ordering: .acquiringAndReleasing)
        return Opened(scope: scope)
    }

    /// One counted opening.
    @_spi(OutpostInternal) public final class Opened: Sendable {
        private let scope: OpenResources?
        private let closed = Atomic(false)

        fileprivate init(scope: OpenResources?) { self.scope = scope }

        /// Takes the opening back from the tallies it was counted in; later calls do nothing.
        @_spi(OutpostInternal) public func close() {
            guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
            OpenResources.process.count.subtract(1, ordering: .acquiringAndReleasing)
            scope?.count.subtract(1, ordering: .acquiringAndReleasing)
        }
    }
}
