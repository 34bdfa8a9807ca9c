extension RecordRoutes {
    /// The most keys `sort` may name, the tie-break not counted.
    static let maxSortKeys = 3

    /// `sort=-views,title`: up to ``maxSortKeys`` comma-separated names, each a top-level field
    /// (1–64 letters, digits, `_` or `-`) or `created`, `updated`, `id`, with `-` for descending;
    /// `id` is added as the last key when it is not there, so no two records tie. 400
    /// `invalid_sort` otherwise.
    static func order(_ text: String) throws -> [RecordOrderKey] {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false)
        guard parts.count <= maxSortKeys else {
            throw invalidSort("sort names at most \(maxSortKeys) keys, comma-separated (e.g. -views,title)")
        }
        var keys: [RecordOrderKey] = []
        var seen: Set<RecordOrderKey.Source> = []
        for part in parts {
            let descending = part.hasPrefix("-")
            let name = String(descending ? part.dropFirst() : part[...])
            guard isValidName(name), !name.hasPrefix("-") else {
                throw invalidSort(
                    "'\(part)' is not a sort key: write a field name (1–64 letters, digits, '_' or '-') or created, updated "
                        + "or id, with a leading '-' for descending, keys separated by commas (e.g. -views,title)")
            }
            let source: RecordOrderKey.Source
            switch name {
            case "created", "created_at": source = .created
            case "updated", "updated_at": source = .updated
            case "id": source = .id
            default: source = .field(name)
            }
            guard seen.insert(source).inserted else { throw invalidSort("sort names '\(name)' twice; name each key once") }
            keys.append(RecordOrderKey(source, descending: descending))
        }
        if !seen.contains(.id) { keys.append(RecordOrderKey(.id)) }
        return keys
    }

    static func invalidSort(_ message: String) -> ServerError {
        ServerError.badRequest("invalid_sort", message)
    }
}
