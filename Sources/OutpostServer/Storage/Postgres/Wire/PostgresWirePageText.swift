import NIOCore

extension PostgresStorage {
    /// A keyset page as the list route answers it. Without filters, on the lean read connections,
    /// the page's text is written straight from the rows' bytes (no ``StoredRecord``s); otherwise
    /// from ``listRecords(_:from:backwards:)``.
    public func listRecordText(_ query: RecordQuery, from position: RecordPosition?, backwards: Bool) async throws
        -> RecordPageText
    {
        guard let reads, query.filters.isEmpty else {
            return RecordPageText(
                rows: try await listRecords(query, from: position, backwards: backwards), limit: query.limit,
                backwards: backwards)
        }
        let page = Self.keysetParameters(query, from: position, descending: query.sort.descending != backwards)
        let rows = try await reads.keysetTextRows(
            order: page.order, type: query.type, viewer: query.viewer, start: page.start, limit: page.limit)
        return try PostgresWireReads.decoding { try PostgresWireReads.pageText(rows, limit: query.limit, backwards: backwards) }
    }
}

extension PostgresWireReads {
    /// The page text of keyset rows (``PostgresStorage/pageTextColumns``, in the order walked, up
    /// to `limit + 1`): the first `limit` in page order (reversed when `backwards`), and whether
    /// more follow. Each row is read in place; only the record's id becomes a string.
    static func pageText(_ rows: [ByteBuffer], limit: Int, backwards: Bool) throws -> RecordPageText {
        let count = min(rows.count, limit)
        var text: [UInt8] = []
        var size = 0
        for index in 0..<count { size += rows[index].readableBytes + 64 }
        text.reserveCapacity(size)
        var entries: [RecordPageText.Entry] = []
        entries.reserveCapacity(count)
        for step in 0..<count {
            try PostgresWireRow.reading(rows[backwards ? count - 1 - step : step], columns: 6) { row in
                let seq = try row.int64()
                let id = try row.cell()
                let body = try row.cell()
                let version = try row.int64()
                let created = try row.int64()
                let updated = try row.int64()
                if step > 0 { text.append(UInt8(ascii: ",")) }
                WireText.append(id: id, createdAt: created, updatedAt: updated, body: body, to: &text)
                entries.append(
                    RecordPageText.Entry(
                        id: String(decoding: id, as: UTF8.self), version: Int(version), createdAt: created, updatedAt: updated,
                        seq: seq))
            }
        }
        return RecordPageText(text: text, records: entries, more: rows.count > limit)
    }
}
