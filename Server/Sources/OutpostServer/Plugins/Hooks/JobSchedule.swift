/// When a scheduled job is due: every so many milliseconds (at each multiple since 1970), or when a
/// cron expression matches.
enum JobSchedule: Sendable {
    case interval(Int64)
    case cron(CronSchedule)

    /// The latest due time at or before `now`.
    func latest(atOrBefore now: Int64) -> Int64? {
        switch self {
        case .interval(let interval): return WireText.floorDiv(now, max(interval, 1)) * max(interval, 1)
        case .cron(let cron): return cron.previous(atOrBefore: now)
        }
    }

    /// The first due time after `now`.
    func next(after now: Int64) -> Int64? {
        switch self {
        case .interval(let interval): return (WireText.floorDiv(now, max(interval, 1)) + 1) * max(interval, 1)
        case .cron(let cron): return cron.next(after: now)
        }
    }
}

extension Duration {
    /// `minutes` minutes, for job intervals: `registrar.job("sweep", every: .minutes(5)) { ... }`.
    ///
    /// - Parameter minutes: how many minutes.
    public static func minutes(_ minutes: Int) -> Duration { .seconds(minutes * 60) }

    /// `hours` hours, for job intervals: `registrar.job("report", every: .hours(24)) { ... }`.
    ///
    /// - Parameter hours: how many hours.
    public static func hours(_ hours: Int) -> Duration { .seconds(hours * 3600) }
}
