import Foundation

/// CPU time used, split by who used it: this process (the server under test, and the bench's own
/// idle tasks), its finished child processes (wrk, the load generator) and, when the storage is a
/// PostgreSQL server on this machine, that database's backend processes. The difference of two
/// samples divided by the requests served in between is the CPU per request of each part.
struct CPUAccount: Sendable {
    var process: Double
    var children: Double
    var backends: Double?

    /// Now, with `backends` the database's total so far (`nil` when it cannot be read).
    static func now(backends: Double?) -> CPUAccount {
        CPUAccount(process: seconds(children: false), children: seconds(children: true), backends: backends)
    }

    /// User plus system time of this process, or of its children that have ended.
    static func seconds(children: Bool) -> Double {
        var usage = rusage()
        #if os(Linux)
            getrusage(children ? RUSAGE_CHILDREN.rawValue : RUSAGE_SELF.rawValue, &usage)
        #else
            getrusage(children ? RUSAGE_CHILDREN : RUSAGE_SELF, &usage)
        #endif
        func value(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1_000_000 }
        return value(usage.ru_utime) + value(usage.ru_stime)
    }

    /// Microseconds of CPU per request of each part between `start` and `self`.
    func perRequest(since start: CPUAccount, requests: Int) -> (process: Double, children: Double, backends: Double?) {
        let count = Double(max(1, requests)) / 1_000_000
        let backends = backends.flatMap { end in start.backends.map { (end - $0) / count } }
        return ((process - start.process) / count, (children - start.children) / count, backends)
    }
}
