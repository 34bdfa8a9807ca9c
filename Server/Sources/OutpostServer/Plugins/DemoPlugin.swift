public import Foundation
@_spi(OutpostInternal) import OutpostCore

/// The built-in demo plugin: the `hello:someone` lambda, the `time` handler, and a before hook on
/// `notes` records.
///
/// - `hello:someone` takes a name, positional (`["world"]`) or named (`{"name": "world"}`), and
///   answers `"Hello, world!"`.
/// - `time` takes `{"zone": "Asia/Tokyo"}` and answers the current time there:
///   `{"zone", "time" (ISO 8601 with the zone's offset), "utc_offset_seconds", "abbreviation"}`.
///   An unknown zone is a 400 `unknown_time_zone`.
/// - Before a `notes` record is created or updated, its `words` field is set to the number of
///   whitespace-separated words in its `text`; a note without text (missing, not a string, or only
///   whitespace) is refused with 422 `text_required`.
public struct DemoPlugin: ServerPlugin {
    public let identifier = "outpost.demo"
    /// The clock, a seam for tests.
    public var now: @Sendable () -> Date

    public init(now: @escaping @Sendable () -> Date = { Date() }) {
        self.now = now
    }

    public func register(into registrar: inout PluginRegistrar) throws {
        try registrar.lambda("hello:someone") { call in
            guard let name = call.arguments.string(0, named: "name") else {
                throw ServerError.badRequest(
                    "missing_argument", "hello:someone needs a name: [\"world\"] or {\"name\": \"world\"}")
            }
            return .string("Hello, \(name)!")
        }
        try registrar.before(.create, .update, on: "notes") { note in
            let words = Self.wordCount(note.fields["text"]?.stringValue ?? "")
            guard words > 0 else {
                throw RecordRefusal(
                    "text_required", "A note needs text: send {\"text\": \"...\"} with at least one word")
            }
            note.fields["words"] = .int(words)
        }
        let now = self.now
        try registrar.handler("time") { call in
            guard let zoneName = call.body["zone"]?.stringValue, !zoneName.isEmpty else {
                throw ServerError.badRequest("missing_zone", "Send {\"zone\": \"Area/City\"}, e.g. {\"zone\": \"Europe/Paris\"}")
            }
            guard let zone = TimeZone(identifier: zoneName) else {
                throw ServerError.badRequest(
                    "unknown_time_zone",
                    "Unknown time zone '\(zoneName)'; use an IANA name such as Europe/Paris or America/New_York",
                    details: ["zone": .string(zoneName)])
            }
            let date = now()
            let formatter = ISO8601DateFormatter()
            formatter.timeZone = zone
            formatter.formatOptions = [.withInternetDateTime]
            return .json([
                "zone": .string(zone.identifier),
                "time": .string(formatter.string(from: date)),
                "utc_offset_seconds": .int(zone.secondsFromGMT(for: date)),
                "abbreviation": zone.abbreviation(for: date).map(JSONValue.string) ?? .null,
            ])
        }
    }

    /// The number of runs of non-whitespace characters in `text`.
    static func wordCount(_ text: String) -> Int {
        text.split(whereSeparator: { $0.isWhitespace }).count
    }
}
