import Foundation

/// CPU time used, split by who used it: this process (the server under test, and the bench's own
/// idle tasks), its finished child processes (wrk, the load generator) and, when the storage is a
/// PostgreSQL server on this machine, that database's backend processes. The difference of two
/// samples divided by the requests served in between is the CPU per request of each part.
struct CPUAccount: Sendable {
    var process: Double
    var children: Double
    var backends: Double?
    /// This process's context switches so far (voluntary and involuntary): each time one of its
    /// threads went to sleep (waiting for work) or was preempted.
    var switches: Double = 0

    /// Now, with `backends` the database's total so far (`nil` when it cannot be read).
    static func now(backends: Double?) -> CPUAccount {
        CPUAccount(
            process: seconds(children: false), children: seconds(children: true), backends: backends,
            switches: contextSwitches())
    }

    /// User plus system time of this process, or of its children that have ended.
    static func seconds(children: Bool) -> Double {
        let times = usage(children: children)
        func value(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1_000_000 }
        return value(times.ru_utime) + value(times.ru_stime)
    }

    /// Voluntary plus involuntary context switches of this process's threads.
    static func contextSwitches() -> Double {
        let counts = usage(children: false)
        return Double(counts.ru_nvcsw + counts.ru_nivcsw)
    }

    /// `getrusage` of this process, or of its children that have ended.
    static func usage(children: Bool) -> rusage {
        var usage = rusage()
        #if os(Linux)
            getrusage(children ? RUSAGE_CHILDREN.rawValue : RUSAGE_SELF.rawValue, &usage)
        #else
            getrusage(children ? RUSAGE_CHILDREN : RUSAGE_SELF, &usage)
        #endif
        return usage
    }

    /// Microseconds of CPU per request of each part between `start` and `self`, and this process's
    /// context switches per request.
    func perRequest(since start: CPUAccount, requests: Int) -> CPUPerRequest {
        let count = Double(max(1, requests)) / 1_000_000
        let backends = backends.flatMap { end in start.backends.map { (end - $0) / count } }
        return CPUPerRequest(
            process: (process - start.process) / count, children: (children - start.children) / count, backends: backends,
            switches: (switches - start.switches) / Double(max(1, requests)))
    }
}

/// CPU per request, µs, of this process, its finished children and the database's backends, and
/// this process's context switches per request.
struct CPUPerRequest: Sendable {
    var process: Double
    var children: Double
    var backends: Double?
    var switches: Double
}
