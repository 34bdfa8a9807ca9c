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
        let rows = try await reads.keysetRows(
            order: page.order, type: query.type, viewer: query.viewer, start: page.start, limit: page.limit)
        return try PostgresWireReads.decoding { try PostgresWireReads.pageText(rows, limit: query.limit, backwards: backwards) }
    }
}

extension PostgresWireReads {
    /// The page text of keyset rows (``PostgresStorage/columns``, in the order walked, up to
    /// `limit + 1`): the first `limit` in page order (reversed when `backwards`), and whether more follow.
    static func pageText(_ rows: [ByteBuffer], limit: Int, backwards: Bool) throws -> RecordPageText {
        let kept = rows.prefix(limit)
        var text: [UInt8] = []
        text.reserveCapacity(kept.reduce(0) { $0 + $1.readableBytes + 64 })
        var entries: [RecordPageText.Entry] = []
        entries.reserveCapacity(kept.count)
        for payload in backwards ? Array(kept.reversed()) : Array(kept) {
            var row = try PostgresWireRow(payload, columns: 9)
            let seq = try row.int64()
            _ = try row.nextCell()  // type
            guard let id = try row.nextCell(), let idText = String(bytes: id.readableBytesView, encoding: .utf8) else {
                throw PostgresWireError.protocolViolation("a record row has no id")
            }
            _ = try row.nextCell()  // owner
            guard let body = try row.nextCell() else { throw PostgresWireError.protocolViolation("a record row has no body") }
            let version = try row.int64()
            let created = try row.int64()
            let updated = try row.int64()
            if !entries.isEmpty { text.append(UInt8(ascii: ",")) }
            WireText.append(
                id: id.readableBytesView, createdAt: created, updatedAt: updated, body: body.readableBytesView, to: &text)
            entries.append(
                RecordPageText.Entry(id: idText, version: Int(version), createdAt: created, updatedAt: updated, seq: seq))
        }
        return RecordPageText(text: text, records: entries, more: rows.count > limit)
    }
}
