import Foundation

/// The samples of a Prometheus text exposition (format 0.0.4), read as a scraper would: one
/// `name{label="value",...} number` a line, comments skipped.
struct PrometheusText {
    struct Sample {
        let name: String
        let labels: [String: String]
        let value: Double
    }

    let samples: [Sample]

    init(_ text: String) {
        samples = text.split(separator: "\n").compactMap(Self.sample)
    }

    /// The value of the sample named `name` whose labels are exactly `labels`; `nil` when none is.
    func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        samples.first { $0.name == name && $0.labels == labels }?.value
    }

    /// The samples named `name` whose labels include `labels`.
    func matching(_ name: String, _ labels: [String: String] = [:]) -> [Sample] {
        samples.filter { sample in sample.name == name && labels.allSatisfy { sample.labels[$0.key] == $0.value } }
    }

    private static func sample(_ line: Substring) -> Sample? {
        guard !line.hasPrefix("#"), let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...])
        else { return nil }
        let series = line[..<space]
        guard let brace = series.firstIndex(of: "{") else { return Sample(name: String(series), labels: [:], value: value) }
        var labels: [String: String] = [:]
        var rest = series[series.index(after: brace)...].dropLast()
        while let equals = rest.firstIndex(of: "=") {
            let key = String(rest[..<equals])
            rest = rest[rest.index(equals, offsetBy: 2)...]
            var text = ""
            var escaped = false
            var index = rest.startIndex
            while index < rest.endIndex {
                let character = rest[index]
                index = rest.index(after: index)
                if escaped {
                    text.append(character == "n" ? "\n" : character)
                    escaped = false
                } else if character == "\\" {
                    escaped = true
                } else if character == "\"" {
                    break
                } else {
                    text.append(character)
                }
            }
            labels[key] = text
            rest = rest[index...].drop { $0 == "," }
        }
        return Sample(name: String(series[..<brace]), labels: labels, value: value)
    }
}
