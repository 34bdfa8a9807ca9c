import NIOCore

extension PostgresStorage {
    /// A keyset page as the list route answers it. Without filters, on the lean read connections,
    /// the page's text is written from the rows' bytes as they are read (no ``StoredRecord``s);
    /// otherwise from ``listRecords(_:from:backwards:)``.
    public func listRecordText(_ query: RecordQuery, from position: RecordPosition?, backwards: Bool) async throws
        -> RecordPageText
    {
        guard let reads, query.filters.isEmpty else {
            return RecordPageText(
                rows: try await listRecords(query, from: position, backwards: backwards), limit: query.limit,
                backwards: backwards)
        }
        let page = Self.keysetParameters(query, from: position, descending: query.sort.descending != backwards)
        let text = PostgresWirePageText(limit: query.limit, backwards: backwards)
        try await reads.keysetText(
            order: page.order, type: query.type, viewer: query.viewer, start: page.start, limit: page.limit, into: text)
        return try PostgresWireReads.decoding { try text.page() }
    }
}

extension PostgresWireReads {
    /// The page text of keyset rows (``PostgresStorage/pageTextColumns``, in the order walked, up
    /// to `limit + 1`), as ``PostgresWirePageText`` writes it from rows as they are read.
    static func pageText(_ rows: [ByteBuffer], limit: Int, backwards: Bool) throws -> RecordPageText {
        let text = PostgresWirePageText(limit: limit, backwards: backwards)
        for row in rows {
            row.withUnsafeReadableBytes { text.row($0.assumingMemoryBound(to: UInt8.self)) }
        }
        return try text.page()
    }
}

/// A list page's text written from its keyset rows (``PostgresStorage/pageTextColumns``, in the
/// order walked) as the lean connection reads them, in place: no record's id becomes a string.
/// The first `limit` rows are the page (in reverse when `backwards`); a row beyond them only
/// tells that more follow and is not read.
///
/// Written on the connection's event loop while the query runs, read by the query's caller once
/// it has returned (the continuation orders the two).
final class PostgresWirePageText: PostgresWireRowSink, @unchecked Sendable {
    /// All of the page so far in one value, so that a row is one access to the class's storage
    /// (each stored property of a class read or written is an exclusivity check of its own).
    private var state: State

    init(limit: Int, backwards: Bool) {
        state = State(limit: limit, backwards: backwards)
    }

    func row(_ payload: UnsafeBufferPointer<UInt8>) {
        state.row(payload)
    }

    /// The page, in page order.
    ///
    /// - Throws: the ``PostgresWireError`` of the first row that could not be read.
    func page() throws -> RecordPageText {
        try state.page()
    }

    struct State {
        let limit: Int
        let backwards: Bool
        var text: [UInt8] = []
        var keys: RecordPageText.Keys
        /// Backwards, where each record's text is in ``text``, to put them in page order at the end.
        var ranges: [Range<Int>] = []
        var more = false
        /// Why a row could not be read: the page fails with it (later rows are not read).
        var error: PostgresWireError?

        init(limit: Int, backwards: Bool) {
            self.limit = limit
            self.backwards = backwards
            text.reserveCapacity(min(limit, 100) * 256)
            keys = RecordPageText.Keys(capacity: min(limit, 100))
        }

        mutating func row(_ payload: UnsafeBufferPointer<UInt8>) {
            guard error == nil else { return }
            guard keys.positions.count < limit else {
                more = true
                return
            }
            do {
                var row = try PostgresWireRow(payload, columns: 6)
                let seq = try row.int64()
                let id = try row.cell()
                let body = try row.cell()
                let version = try row.int64()
                let created = try row.int64()
                let updated = try row.int64()
                if !backwards && !keys.positions.isEmpty { text.append(UInt8(ascii: ",")) }
                let start = text.count
                WireText.append(id: id, createdAt: created, updatedAt: updated, body: body, to: &text)
                if backwards { ranges.append(start..<text.count) }
                keys.append(id: id, version: Int(version), createdAt: created, updatedAt: updated, seq: seq)
            } catch let error as PostgresWireError {
                self.error = error
            } catch {
                self.error = .protocolViolation("\(error)")
            }
        }

        func page() throws -> RecordPageText {
            if let error { throw error }
            guard backwards else { return RecordPageText(text: text, keys: keys, more: more) }
            var ordered: [UInt8] = []
            ordered.reserveCapacity(text.count + ranges.count)
            for (offset, range) in ranges.reversed().enumerated() {
                if offset > 0 { ordered.append(UInt8(ascii: ",")) }
                ordered.append(contentsOf: text[range])
            }
            return RecordPageText(text: ordered, keys: keys.inReverse(), more: more)
        }
    }
}
