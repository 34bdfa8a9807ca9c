import Foundation
import Testing

@testable import OutpostServer

/// Cron expressions: what they parse to, what they refuse, and their next and previous times
/// against Foundation's Gregorian calendar in UTC.
@Suite("Cron schedules")
struct CronScheduleTests {
    static let calendar: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar
    }()

    static func time(_ text: String) -> Int64 {
        let formatter = ISO8601DateFormatter()
        return Int64(formatter.date(from: text)!.timeIntervalSince1970 * 1000)
    }

    static func text(_ time: Int64?) -> String? {
        time.map { ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double($0) / 1000)) }
    }

    @Test("next and previous times of common expressions")
    func known() throws {
        let start = Self.time("2026-11-28T05:17:30Z")  // a Saturday
        let cases: [(String, String, String)] = [
            ("*/5 * * * *", "2026-11-28T05:20:00Z", "2026-11-28T05:15:00Z"),
            ("0 * * * *", "2026-11-28T06:00:00Z", "2026-11-28T05:00:00Z"),
            ("@daily", "2026-11-29T00:00:00Z", "2026-11-28T00:00:00Z"),
            ("30 7 * * MON", "2026-11-30T07:30:00Z", "2026-11-23T07:30:00Z"),
            ("0 9 1 * *", "2026-12-01T09:00:00Z", "2026-11-01T09:00:00Z"),
            ("0 0 29 2 *", "2028-02-29T00:00:00Z", "2024-02-29T00:00:00Z"),
            ("15 10 * JAN-MAR/2 *", "2027-01-01T10:15:00Z", "2026-03-31T10:15:00Z"),
            // Both day fields restricted: either matches (the 1st, or a Sunday).
            ("0 12 1 * 0", "2026-11-29T12:00:00Z", "2026-11-22T12:00:00Z"),
            ("0 12 * * 7", "2026-11-29T12:00:00Z", "2026-11-22T12:00:00Z"),
            ("5-10/5 23 * * sat", "2026-11-28T23:05:00Z", "2026-11-21T23:10:00Z"),
        ]
        for (expression, next, previous) in cases {
            let cron = try CronSchedule(expression)
            #expect(Self.text(cron.next(after: start)) == next, "\(expression)")
            #expect(Self.text(cron.previous(atOrBefore: start)) == previous, "\(expression)")
        }
        // A match at the very time is the previous one, not the next.
        let hourly = try CronSchedule("@hourly")
        let six = Self.time("2026-11-28T06:00:00Z")
        #expect(hourly.previous(atOrBefore: six) == six)
        #expect(hourly.next(after: six) == six + 3_600_000)
    }

    @Test("bad expressions are refused with the field they are about")
    func refused() {
        let cases: [(String, String)] = [
            ("* * * *", "has 4 fields"),
            ("60 * * * *", "minute field"),
            ("* 24 * * *", "hour field"),
            ("* * 0 * *", "day-of-month field"),
            ("* * * 13 *", "month field"),
            ("* * * * 8", "day-of-week field"),
            ("*/0 * * * *", "step"),
            ("5-1 * * * *", "ends before it starts"),
            ("1,,2 * * * *", "empty item"),
            ("0 0 31 2 *", "no date matches"),
            ("0 0 30 FEB *", "no date matches"),
            ("@often", "has 1 fields"),
            (String(repeating: "1,", count: 200) + "1 * * * *", "longer than 256"),
            ("99999999999999999999 * * * *", "minute field"),
        ]
        for (expression, fragment) in cases {
            do {
                _ = try CronSchedule(expression)
                Issue.record("'\(expression)' parsed")
            } catch {
                #expect("\(error)".contains(fragment), "\(expression): \(error)")
            }
        }
    }

    /// The expression's next time found another way: walking the days with Foundation's calendar.
    static func oracleNext(_ fields: [Set<Int>], anyDays: (Bool, Bool), after time: Int64) -> Int64? {
        let start = (time / 60_000 + 1) * 60_000
        var day = calendar.startOfDay(for: Date(timeIntervalSince1970: Double(start) / 1000))
        for _ in 0..<800 {
            let parts = calendar.dateComponents([.day, .month, .weekday], from: day)
            let byMonth = fields[2].contains(parts.day!)
            let byWeek = fields[4].contains(parts.weekday! - 1)
            let dayMatches: Bool
            switch anyDays {
            case (true, true): dayMatches = true
            case (true, false): dayMatches = byWeek
            case (false, true): dayMatches = byMonth
            case (false, false): dayMatches = byMonth || byWeek
            }
            if dayMatches && fields[3].contains(parts.month!) {
                for hour in fields[1].sorted() {
                    for minute in fields[0].sorted() {
                        let candidate = Int64(day.timeIntervalSince1970 * 1000) + Int64(hour * 3_600_000 + minute * 60_000)
                        if candidate >= start { return candidate }
                    }
                }
            }
            day = calendar.date(byAdding: .day, value: 1, to: day)!
        }
        return nil
    }

    @Test("random expressions: next equals a walk over Foundation's calendar; previous undoes next")
    func differential() throws {
        var random = SystemRandomNumberGenerator()
        func field(_ range: ClosedRange<Int>) -> String {
            switch Int.random(in: 0..<5, using: &random) {
            case 0: return "*"
            case 1: return "*/\(Int.random(in: 1...7, using: &random))"
            case 2:
                let low = Int.random(in: range, using: &random)
                return "\(low)-\(Int.random(in: low...range.upperBound, using: &random))"
            case 3: return (0..<3).map { _ in String(Int.random(in: range, using: &random)) }.joined(separator: ",")
            default: return String(Int.random(in: range, using: &random))
            }
        }
        var checked = 0
        for _ in 0..<150 {
            let text = [field(0...59), field(0...23), field(1...28), field(1...12), field(0...6)].joined(separator: " ")
            let cron = try CronSchedule(text)
            let fields = [cron.minutes, cron.hours, cron.daysOfMonth, cron.months, cron.daysOfWeek]
            let from = Int64.random(in: 1_700_000_000_000...1_900_000_000_000, using: &random)
            let next = cron.next(after: from)
            #expect(next == Self.oracleNext(fields, anyDays: (cron.anyDayOfMonth, cron.anyDayOfWeek), after: from), "\(text)")
            if let next {
                #expect(cron.previous(atOrBefore: next) == next, "\(text)")
                #expect(cron.previous(atOrBefore: next - 1).map { $0 < next } ?? true, "\(text)")
                checked += 1
            }
        }
        #expect(checked > 100)
    }

    @Test("any text: parsed or refused, never a crash")
    func fuzz() {
        var random = SystemRandomNumberGenerator()
        let alphabet = Array("0123456789*/-, \tJANMONsat@hourly")
        for _ in 0..<2000 {
            let text = String((0..<Int.random(in: 0...40, using: &random)).map { _ in alphabet.randomElement(using: &random)! })
            if let cron = try? CronSchedule(text) {
                #expect(cron.next(after: 0) != nil)
            }
        }
    }

    @Test("jobs register by interval or cron; a short interval, a bad cron and a taken name are refused")
    func registration() throws {
        var registrar = PluginRegistrar()
        try registrar.job("sweep", every: .minutes(5)) { _ in }
        try registrar.job("digest", cron: "30 7 * * MON") { _ in }
        #expect(registrar.hooks.jobs.map(\.name) == ["sweep", "digest"])
        let start = Self.time("2026-11-28T05:17:30Z")
        #expect(Self.text(registrar.hooks.jobs[0].schedule.latest(atOrBefore: start)) == "2026-11-28T05:15:00Z")
        #expect(Self.text(registrar.hooks.jobs[0].schedule.next(after: start)) == "2026-11-28T05:20:00Z")
        #expect(Self.text(registrar.hooks.jobs[1].schedule.next(after: start)) == "2026-11-30T07:30:00Z")
        #expect(Duration.hours(2) == .seconds(7200))
        for (attempt, code) in [
            ({ (r: inout PluginRegistrar) in try r.job("fast", every: .milliseconds(500)) { _ in } }, "invalid_job_interval"),
            ({ (r: inout PluginRegistrar) in try r.job("odd", cron: "* * 31 2 *") { _ in } }, "invalid_cron"),
            ({ (r: inout PluginRegistrar) in try r.job("sweep", every: .minutes(1)) { _ in } }, "duplicate_job"),
            ({ (r: inout PluginRegistrar) in try r.job("bad name", every: .minutes(1)) { _ in } }, "invalid_job_name"),
            ({ (r: inout PluginRegistrar) in try r.before(.create, on: "no/type") { _ in } }, "invalid_hook_type"),
            ({ (r: inout PluginRegistrar) in try r.after(on: "notes", name: "x") { _ in } }, "invalid_hook_operations"),
        ] as [((inout PluginRegistrar) throws -> Void, String)] {
            do {
                try attempt(&registrar)
                Issue.record("\(code) was not refused")
            } catch let error as ServerError {
                #expect(error.code == code)
            }
        }
    }
}
