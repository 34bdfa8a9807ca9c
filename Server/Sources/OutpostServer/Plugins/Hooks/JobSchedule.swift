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
