@_spi(OutpostInternal) import OutpostSupport

/// A cron expression: five fields, `minute hour day-of-month month day-of-week`, in UTC.
///
/// Each field is `*`, a number, a range `a-b`, a step `*/n`, `a-b/n` or `a/n` (from `a` to the
/// field's end), or a comma list of those. Months take `JAN`–`DEC` and days of the week `SUN`–`SAT`
/// (0 and 7 are both Sunday). When both day fields are restricted, a day matches either (as in
/// Vixie cron). `@hourly`, `@daily` (`@midnight`), `@weekly`, `@monthly` and `@yearly`
/// (`@annually`) stand for their usual expressions.
public struct CronSchedule: Sendable, Hashable, CustomStringConvertible {
    /// Why an expression was refused, with the field it is about.
    public struct ParseError: Error, Sendable, Hashable, CustomStringConvertible {
        public var expression: String
        public var message: String
        public var description: String { "'\(expression)' is not a cron expression: \(message)" }
    }

    public let description: String
    let minutes: Set<Int>
    let hours: Set<Int>
    let daysOfMonth: Set<Int>
    let months: Set<Int>
    let daysOfWeek: Set<Int>
    /// Whether each day field is `*` (or a step over it), for the either-day rule.
    let anyDayOfMonth: Bool
    let anyDayOfWeek: Bool

    /// The longest expression taken.
    static let maxLength = 256
    /// How far ``next(after:)`` and ``previous(atOrBefore:)`` look: past eight years, a leap day
    /// (29 February) is found even across a century that skips one.
    static let searchDays: Int64 = 8 * 366 + 1

    static let macros: [String: String] = [
        "@hourly": "0 * * * *", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@weekly": "0 0 * * 0",
        "@monthly": "0 0 1 * *", "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *",
    ]
    static let monthNames = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]
    static let dayNames = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]

    /// - Parameter expression: five fields, or a macro such as `@daily`.
    /// - Throws: ``ParseError`` naming the field that is wrong; also for an expression that never
    ///   matches (such as 31 February).
    public init(_ expression: String) throws {
        let trimmed = expression.trimmingCharacters(in: .whitespaces)
        func fail(_ message: String) -> ParseError { ParseError(expression: expression, message: message) }
        guard trimmed.utf8.count <= Self.maxLength else { throw fail("it is longer than \(Self.maxLength) characters") }
        let text = Self.macros[trimmed.lowercased()] ?? trimmed
        let fields = text.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        guard fields.count == 5 else {
            throw fail("it has \(fields.count) fields; write five: minute hour day-of-month month day-of-week")
        }
        description = expression
        func field(_ index: Int, _ name: String, _ range: ClosedRange<Int>, names: [String] = [], base: Int = 0) throws
            -> Set<Int>
        {
            do {
                return try Self.values(fields[index], range: range, names: names, base: base)
            } catch let message as FieldError {
                throw fail("the \(name) field '\(fields[index])' \(message.text)")
            }
        }
        minutes = try field(0, "minute", 0...59)
        hours = try field(1, "hour", 0...23)
        daysOfMonth = try field(2, "day-of-month", 1...31)
        months = try field(3, "month", 1...12, names: Self.monthNames, base: 1)
        daysOfWeek = Set(try field(4, "day-of-week", 0...7, names: Self.dayNames).map { $0 % 7 })
        anyDayOfMonth = fields[2].hasPrefix("*")
        anyDayOfWeek = fields[4].hasPrefix("*")
        guard next(after: 0) != nil else { throw fail("no date matches it") }
    }

    struct FieldError: Error {
        var text: String
    }

    /// The values one field stands for.
    static func values(_ text: String, range: ClosedRange<Int>, names: [String], base: Int) throws -> Set<Int> {
        var result = Set<Int>()
        let items = text.split(separator: ",", omittingEmptySubsequences: false)
        guard items.count <= 64 else { throw FieldError(text: "has more than 64 items") }
        func number(_ part: Substring) throws -> Int {
            if let index = names.firstIndex(of: part.uppercased()) { return index + base }
            guard part.count <= 4, let value = Int(part), range.contains(value) else {
                throw FieldError(text: "has '\(part)', which is not a number from \(range.lowerBound) to \(range.upperBound)")
            }
            return value
        }
        for item in items {
            let pieces = item.split(separator: "/", omittingEmptySubsequences: false)
            guard (1...2).contains(pieces.count), !pieces[0].isEmpty else { throw FieldError(text: "has an empty item") }
            var step = 1
            if pieces.count == 2 {
                guard pieces[1].count <= 4, let value = Int(pieces[1]), value >= 1 else {
                    throw FieldError(text: "has the step '\(pieces[1])'; a step is a whole number from 1")
                }
                step = value
            }
            let bounds: ClosedRange<Int>
            if pieces[0] == "*" {
                bounds = range
            } else if let dash = pieces[0].firstIndex(of: "-") {
                let low = try number(pieces[0][..<dash])
                let high = try number(pieces[0][pieces[0].index(after: dash)...])
                guard low <= high else { throw FieldError(text: "has the range '\(pieces[0])', which ends before it starts") }
                bounds = low...high
            } else {
                let value = try number(pieces[0])
                bounds = value...(pieces.count == 2 ? range.upperBound : value)
            }
            for value in stride(from: bounds.lowerBound, through: bounds.upperBound, by: step) { result.insert(value) }
        }
        return result
    }

    /// Whether the day `days` after 1970-01-01 matches the day fields and the month.
    func matches(day days: Int64) -> Bool {
        let date = CivilDate.date(days: days)
        guard months.contains(Int(date.month)) else { return false }
        let weekday = Int(((days % 7) + 11) % 7)  // 1970-01-01 was a Thursday (4).
        let byMonth = daysOfMonth.contains(Int(date.day))
        let byWeek = daysOfWeek.contains(weekday)
        switch (anyDayOfMonth, anyDayOfWeek) {
        case (true, true): return true
        case (true, false): return byWeek
        case (false, true): return byMonth
        case (false, false): return byMonth || byWeek
        }
    }

    /// The first matching minute after `time` (milliseconds since 1970), or `nil` within eight years.
    public func next(after time: Int64) -> Int64? {
        let start = WireText.floorDiv(time, 60_000) * 60_000 + 60_000
        let firstDay = WireText.floorDiv(start, 86_400_000)
        let sortedHours = hours.sorted()
        let sortedMinutes = minutes.sorted()
        for day in firstDay...(firstDay + Self.searchDays) where matches(day: day) {
            for hour in sortedHours {
                for minute in sortedMinutes {
                    let candidate = day * 86_400_000 + Int64(hour) * 3_600_000 + Int64(minute) * 60_000
                    if candidate >= start { return candidate }
                }
            }
        }
        return nil
    }

    /// The last matching minute at or before `time` (milliseconds since 1970), or `nil` within eight years.
    public func previous(atOrBefore time: Int64) -> Int64? {
        let lastDay = WireText.floorDiv(time, 86_400_000)
        let sortedHours = hours.sorted(by: >)
        let sortedMinutes = minutes.sorted(by: >)
        for day in stride(from: lastDay, through: lastDay - Self.searchDays, by: -1) where matches(day: day) {
            for hour in sortedHours {
                for minute in sortedMinutes {
                    let candidate = day * 86_400_000 + Int64(hour) * 3_600_000 + Int64(minute) * 60_000
                    if candidate <= time { return candidate }
                }
            }
        }
        return nil
    }
}
