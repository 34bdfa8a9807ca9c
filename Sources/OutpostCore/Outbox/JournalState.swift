import Foundation

/// One record of the journal. The file is the sequence of these; the queue is what they add up to.
enum JournalRecord: Codable {
    case enqueued(OutboxEntry)
    /// The write reached the server; `etag` is the record's ETag after it.
    case completed(id: UUID, etag: String?)
    case failed(id: UUID, failure: OutboxFailure)
    /// Put back in line, with a new `If-Match` when given.
    case reset(id: UUID, ifMatch: String?)
    case removed(id: UUID)
}

/// The open journal and the queue it holds. Lives in the outbox's mutex and is used only on its
/// dispatch queue, so every method may block on the file. Every method that reads or writes the
/// file runs inside ``locked(_:)``: in this process's turn, after catching up with the others.
struct JournalState {
    var file: OutboxFile?
    /// Pending and failed entries, in queue order.
    private(set) var entries: [OutboxEntry] = []
    private var nextSequence: UInt64 = 1
    /// Entries being sent.
    var inFlight: Set<UUID> = []
    /// The framed size of each live entry's record, to tell when compaction pays.
    private var frameSizes: [UUID: Int] = [:]

    var pendingCount: Int { entries.count { $0.state == .pending } }

    // MARK: Loading and catching up

    /// Opens the journal and rebuilds the queue from its records. A corrupt tail is copied to a
    /// `.corrupt` file and the journal rewritten without it.
    static func load(_ url: URL) throws -> (JournalState, OutboxCorruption?) {
        let file = try OutboxFile(url: url)
        var state = JournalState(file: file)
        let corruption = try file.withLock { try state.catchUp() }
        return (state, corruption)
    }

    /// Runs `body` in this process's turn at the journal (``OutboxFile/withLock(_:)``), after
    /// reading what other processes wrote since the last turn. A closed journal runs `body` as it
    /// is (it reports the closing).
    mutating func locked<T>(_ body: (inout JournalState) throws -> T) throws -> T {
        guard let file else { return try body(&self) }
        return try file.withLock {
            _ = try catchUp()
            return try body(&self)
        }
    }

    /// Under the lock: applies the records appended since this process last looked, or rebuilds
    /// the queue when the file was replaced (another process compacted it). An unreadable tail is
    /// set aside in a `.corrupt` file and the journal rewritten without it, so that nothing is
    /// appended after damage.
    mutating func catchUp() throws -> OutboxCorruption? {
        guard let file, let (data, offset) = try file.readChanges() else { return nil }
        let scan: OutboxFraming.Scan
        if offset == 0 {
            entries = []
            frameSizes = [:]
            scan = OutboxFraming.scan(data)
        } else {
            scan = OutboxFraming.scanFrames(data, at: offset)
        }
        var corruptOffset = scan.corruptOffset
        var reason = scan.corruptReason
        let decoder = JSONDecoder()
        for (frameOffset, payload) in scan.frames {
            guard let record = try? decoder.decode(JournalRecord.self, from: payload) else {
                corruptOffset = frameOffset
                reason = "a frame's checksum matches but it is not an outbox record (written by a newer version?)"
                break
            }
            apply(record, frameSize: payload.count + OutboxFraming.frameOverhead)
        }
        guard let corruptOffset else { return nil }
        let tail = data.subdata(in: (corruptOffset - offset)..<data.count)
        let saved = try file.setAside(tail)
        try compact()
        return OutboxCorruption(offset: corruptOffset, byteCount: tail.count, reason: reason ?? "unreadable", savedAt: saved)
    }

    /// Applies one record to the queue, as when it was first written.
    private mutating func apply(_ record: JournalRecord, frameSize: Int) {
        switch record {
        case .enqueued(let entry):
            if let index = entries.firstIndex(where: { $0.id == entry.id }) {
                entries[index] = entry
            } else {
                entries.append(entry)
                entries.sort { $0.sequence < $1.sequence }
            }
            frameSizes[entry.id] = frameSize
            nextSequence = max(nextSequence, entry.sequence + 1)
        case .completed(let id, let etag):
            guard let index = entries.firstIndex(where: { $0.id == id }) else { return }
            let done = entries.remove(at: index)
            frameSizes[id] = nil
            // A later write to the same record made against the same ETag now follows this one.
            if let before = done.ifMatch, let etag {
                for other in entries.indices where entries[other].recordKey == done.recordKey && entries[other].ifMatch == before
                {
                    entries[other].ifMatch = etag
                }
            }
        case .failed(let id, let failure):
            guard let index = entries.firstIndex(where: { $0.id == id }) else { return }
            entries[index].state = .failed(failure)
        case .reset(let id, let ifMatch):
            guard let index = entries.firstIndex(where: { $0.id == id }) else { return }
            entries[index].state = .pending
            if let ifMatch { entries[index].ifMatch = ifMatch }
        case .removed(let id):
            entries.removeAll { $0.id == id }
            frameSizes[id] = nil
        }
    }

    // MARK: Writing

    /// Appends `record`, then applies it. Every record but a completion waits for `fsync`. A
    /// completion does not: it survives a killed process (the kernel has it) and becomes durable
    /// with the next `fsync`; if a power loss takes it, the write is sent once more, which its
    /// idempotency key (or the 412 check) makes harmless. That halves the disk flushes of a replay.
    private mutating func write(_ record: JournalRecord) throws {
        guard let file else {
            throw OutpostError(.outboxUnavailable, "The outbox is closed", suggestion: "Open it again with Outbox.open")
        }
        let frame = OutboxFraming.frame(try Self.encode(record))
        var durably = true
        if case .completed = record { durably = false }
        try file.append(frame, durably: durably)
        apply(record, frameSize: frame.count)
    }

    static func encode(_ record: JournalRecord) throws -> Data {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .deferredToDate
        return try encoder.encode(record)
    }

    /// Someone waiting for a staged write to be on disk: its entry and the pending count after it.
    typealias Waiter = CheckedContinuation<(OutboxEntry, Int), any Error>

    /// Queued writes encoded but not yet on disk. Writes queued while an `fsync` runs are staged and
    /// then written together with one write and one `fsync` (group commit): each waits for its own
    /// bytes to be durable, and concurrent writers share the cost of the flush.
    private var staged: [(entry: OutboxEntry, frame: Data, waiter: Waiter)] = []
    /// A flush of the staged writes is on the queue.
    var flushScheduled = false

    /// Stages a write: checks the bound (staged writes included), gives it its sequence number and
    /// encodes its frame. ``flushStaged()`` makes it durable.
    mutating func stage(_ draft: OutboxEntry, maxBytes: Int, waiter: Waiter) throws {
        guard let file else {
            throw OutpostError(.outboxUnavailable, "The outbox is closed", suggestion: "Open it again with Outbox.open")
        }
        var entry = draft
        // Provisional: the flush numbers the batch after reading what other processes appended.
        entry.sequence = nextSequence + UInt64(staged.count)
        entry.state = .pending
        let frame = OutboxFraming.frame(try Self.encode(.enqueued(entry)))
        let stagedBytes = staged.reduce(0) { $0 + $1.frame.count }
        if file.size + stagedBytes + frame.count > maxBytes, file.size > liveBytes { try compact() }
        if file.size + stagedBytes + frame.count > maxBytes {
            throw OutpostError(
                .outboxFull,
                "The outbox is full: \(entries.count + staged.count) writes take \(file.size + stagedBytes) bytes, "
                    + "and this one needs \(frame.count) more than the bound of \(maxBytes)",
                suggestion: "Replay the outbox when the server is reachable, cancel writes, or raise Configuration.maxBytes")
        }
        staged.append((entry, frame, waiter))
    }

    /// Writes every staged write with one append and one `fsync`, and hands back who waits for them
    /// with the outcome.
    mutating func flushStaged() -> (waiters: [(OutboxEntry, Waiter)], result: Result<Int, any Error>) {
        flushScheduled = false
        var batch = staged
        staged = []
        guard let file else {
            return (
                batch.map { ($0.entry, $0.waiter) },
                .failure(OutpostError(.outboxUnavailable, "The outbox is closed", suggestion: "Open it again with Outbox.open"))
            )
        }
        // Another process may have queued writes since these were staged: number them after its.
        do {
            for index in batch.indices where batch[index].entry.sequence != nextSequence + UInt64(index) {
                batch[index].entry.sequence = nextSequence + UInt64(index)
                batch[index].frame = OutboxFraming.frame(try Self.encode(.enqueued(batch[index].entry)))
            }
        } catch {
            return (batch.map { ($0.entry, $0.waiter) }, .failure(error))
        }
        let waiters = batch.map { ($0.entry, $0.waiter) }
        var data = Data(capacity: batch.reduce(0) { $0 + $1.frame.count })
        for item in batch { data.append(item.frame) }
        do {
            try file.append(data)
        } catch {
            return (waiters, .failure(error))
        }
        for item in batch { apply(.enqueued(item.entry), frameSize: item.frame.count) }
        return (waiters, .success(pendingCount))
    }

    /// Gives up every staged write (the journal's lock could not be taken) and hands back who waits.
    mutating func dropStaged() -> [(OutboxEntry, Waiter)] {
        flushScheduled = false
        defer { staged = [] }
        return staged.map { ($0.entry, $0.waiter) }
    }

    mutating func remove(_ id: UUID) throws -> OutboxEntry {
        guard let entry = entries.first(where: { $0.id == id }), !inFlight.contains(id) else {
            throw OutpostError(
                .outboxEntryNotFound,
                inFlight.contains(id)
                    ? "The write \(id) is being sent right now and may already have reached the server"
                    : "No write \(id) is queued in the outbox",
                suggestion: "List the outbox to see what is queued")
        }
        try write(.removed(id: id))
        try compactIfWorthIt()
        return entry
    }

    mutating func reset(_ id: UUID, ifMatch: String?) throws {
        guard let entry = entries.first(where: { $0.id == id }), entry.failure != nil else {
            throw OutpostError(
                .outboxEntryNotFound, "No failed write \(id) is queued in the outbox",
                suggestion: "List the outbox to see what is queued")
        }
        try write(.reset(id: id, ifMatch: ifMatch))
    }

    // MARK: Replay bookkeeping

    /// The writes that may be sent now: the first entry of each record, when it is pending, not in
    /// flight and not in `skipping`. Marks them in flight. At most `limit`.
    mutating func claim(limit: Int, skipping: Set<UUID>) -> [OutboxEntry] {
        var seen: Set<String> = []
        var claimed: [OutboxEntry] = []
        for entry in entries where claimed.count < limit {
            guard seen.insert(entry.recordKey).inserted else { continue }
            guard entry.state == .pending, !inFlight.contains(entry.id), !skipping.contains(entry.id) else { continue }
            inFlight.insert(entry.id)
            claimed.append(entry)
        }
        return claimed
    }

    /// The entry as it is now (its `If-Match` may have followed an earlier write).
    func current(_ id: UUID) -> OutboxEntry? { entries.first { $0.id == id } }

    mutating func release(_ id: UUID) { inFlight.remove(id) }

    mutating func complete(_ id: UUID, etag: String?) throws {
        inFlight.remove(id)
        guard entries.contains(where: { $0.id == id }) else { return }
        try write(.completed(id: id, etag: etag))
        try compactIfWorthIt()
    }

    mutating func fail(_ id: UUID, _ failure: OutboxFailure) throws -> OutboxEntry? {
        inFlight.remove(id)
        guard entries.contains(where: { $0.id == id }) else { return nil }
        try write(.failed(id: id, failure: failure))
        return current(id)
    }

    // MARK: Compaction

    private var liveBytes: Int {
        OutboxFraming.header.count + entries.reduce(0) { $0 + (frameSizes[$1.id] ?? 0) }
    }

    /// Compacts when the records of finished writes take more room than the live ones (and at least
    /// 64 KiB), or when nothing is queued any more.
    mutating func compactIfWorthIt() throws {
        guard let file else { return }
        let dead = file.size - liveBytes
        if (entries.isEmpty && dead > 0) || (dead > 64 << 10 && dead > liveBytes) { try compact() }
    }

    /// Rewrites the journal atomically with one record per live entry, in its current state.
    mutating func compact() throws {
        guard let file else { return }
        var data = Data(OutboxFraming.header)
        var sizes: [UUID: Int] = [:]
        for entry in entries {
            let frame = OutboxFraming.frame(try Self.encode(.enqueued(entry)))
            sizes[entry.id] = frame.count
            data.append(frame)
        }
        try file.replace(with: data)
        frameSizes = sizes
    }
}
