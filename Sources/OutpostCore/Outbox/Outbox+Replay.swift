import Foundation
import HTTPTypes

/// What one ``Outbox/replay()`` did.
public struct OutboxReplaySummary: Sendable, Hashable {
    /// Writes that reached the server (already applied ones included).
    public var completed = 0
    /// Writes the server refused; they wait in the outbox.
    public var failed = 0
    /// Writes that met only failures another try may cure, as many times as the retry policy allows;
    /// they wait for the next replay.
    public var deferred = 0
    /// True when an authentication failure stopped the replay: the other writes would meet it too.
    public var stoppedForAuthentication = false
}

extension Outbox {
    /// Sends every queued write that can go now, in queue order per record, and returns when none
    /// is left to send in this pass.
    ///
    /// - A 2xx completes the write. So does a 412 whose record already shows the write, and a 404 to
    ///   a `DELETE`: the write was applied by an earlier attempt whose reply was lost.
    /// - Another 412 (a real conflict), another 4xx, or a 401/403 stops the write: it is kept, marked
    ///   failed with the server's error, and later writes to the same record wait behind it. An
    ///   authentication failure also stops the replay.
    /// - A failure another try may cure (no connection, timeout, 408, 409, 425, 429, 5xx) is tried
    ///   again after the ``Configuration/retry`` backoff; after its last try the write waits for
    ///   the next replay, and so do later writes to the same record.
    @discardableResult
    public func replay() async -> OutboxReplaySummary {
        var summary = OutboxReplaySummary()
        var skipping: Set<UUID> = []
        let limit = configuration.maxConcurrentWrites
        await withTaskGroup(of: (UUID, Outcome).self) { group in
            var running = 0
            while true {
                if !summary.stoppedForAuthentication, !Task.isCancelled {
                    let wanted = limit - running
                    let skip = skipping
                    let claimed = (try? await journal { $0.claim(limit: wanted, skipping: skip) }) ?? []
                    for entry in claimed {
                        running += 1
                        group.addTask { (entry.id, await self.send(entry)) }
                    }
                }
                guard running > 0, let (id, outcome) = await group.next() else { break }
                running -= 1
                switch outcome {
                case .completed: summary.completed += 1
                case .failed: summary.failed += 1
                case .deferred:
                    // Not again in this pass; free for the next one.
                    summary.deferred += 1
                    skipping.insert(id)
                    _ = try? await journal { $0.release(id) }
                case .stopForAuthentication:
                    summary.failed += 1
                    summary.stoppedForAuthentication = true
                }
            }
        }
        if let pending = try? await journal({ $0.pendingCount }) { emit(.pending(pending)) }
        return summary
    }

    /// Replays now, then again whenever a write is queued or retried, and after a backoff while
    /// writes wait on failures another try may cure (the server down, the network off). Runs until
    /// its task is cancelled or the outbox is closed.
    public func run() async {
        let (wakeups, id) = wakeupStream()
        defer { endWakeups(id) }
        var iterator = wakeups.makeAsyncIterator()
        var idlePasses = 0
        while !Task.isCancelled {
            let summary = await replay()
            guard (try? await journal({ $0.file != nil })) == true else { return }
            if summary.deferred > 0 {
                idlePasses += 1
                // Whichever comes first: the backoff, or a new write to try.
                let delay = configuration.retry.backoff(afterAttempt: idlePasses)
                let retry = configuration.retry
                await withTaskGroup(of: Void.self) { group in
                    group.addTask { try? await retry.sleep(delay) }
                    group.addTask { [self] in _ = await self.nextWakeup(id) }
                    await group.next()
                    group.cancelAll()
                }
                continue
            }
            idlePasses = 0
            guard await iterator.next() != nil else { return }
        }
    }

    /// Waits for a wakeup on a stream of its own (the run loop's iterator cannot be shared with a child task).
    private func nextWakeup(_ id: UUID) async -> Bool {
        let (stream, ownID) = wakeupStream()
        defer { endWakeups(ownID) }
        for await _ in stream { return true }
        return false
    }

    enum Outcome: Sendable {
        case completed, failed, deferred, stopForAuthentication
    }

    /// Sends one write until it completes, fails, or runs out of tries. A deferred write stays
    /// claimed (in flight) until the caller has noted it, so that the pass does not claim it again.
    private func send(_ claimed: OutboxEntry) async -> Outcome {
        var attempt = 0
        while true {
            attempt += 1
            let entry = (try? await journal { $0.current(claimed.id) }) ?? claimed
            let request = makeRequest(entry)
            do {
                let response = try await client.send(request, operationName: "outbox \(entry.label)")
                await configuration.afterResponse?(entry, response.status)
                return await finish(
                    entry,
                    OutboxCompletion(
                        entry: entry, status: response.status, etag: response.headerFields[.eTag],
                        location: response.headerFields[.location], body: response.body, alreadyApplied: false))
            } catch {
                let failure = OutpostError.wrap(error, method: entry.method, path: entry.path)
                if let status = failure.status { await configuration.afterResponse?(entry, status) }
                if failure.code == .cancelled || Task.isCancelled {
                    return .deferred
                }
                if failure.status == 412, configuration.reconcilesConflicts,
                    let applied = await alreadyApplied(entry, request: request)
                {
                    return await finish(entry, applied)
                }
                if failure.status == 404, entry.method == "DELETE" {
                    let gone = OutboxCompletion(
                        entry: entry, status: 404, etag: nil, location: nil, body: Data(), alreadyApplied: true)
                    return await finish(entry, gone)
                }
                if let kind = Self.refusal(failure) {
                    return await stop(entry, OutboxFailure(kind: kind, error: failure))
                }
                guard attempt < configuration.retry.maxAttempts else {
                    configuration.logger.info(
                        "Outbox: \(entry.label) still failing after \(attempt) tries; it waits for the next replay",
                        metadata: ["outbox.entry": "\(entry.id)"])
                    return .deferred
                }
                let delay = configuration.retry.backoff(afterAttempt: attempt)
                emit(.retrying(entry, error: failure, attempt: attempt, delay: delay))
                do {
                    try await configuration.retry.sleep(delay)
                } catch {
                    return .deferred
                }
            }
        }
    }

    /// Whether the server refused the write for good (`nil` when another try may cure the failure).
    static func refusal(_ error: OutpostError) -> OutboxFailure.Kind? {
        guard let status = error.status else {
            // Failures before any answer (no connection, timeout, a lost connection) are worth another try;
            // a request that cannot even be built is not.
            return [.invalidRequest, .encodingFailed].contains(error.code) ? .rejected : nil
        }
        switch status {
        case 412: return .conflict
        case 401, 403: return .authentication
        case 408, 409, 425, 429: return nil
        case 400..<500: return .rejected
        default: return nil
        }
    }

    private func finish(_ entry: OutboxEntry, _ completion: OutboxCompletion) async -> Outcome {
        do {
            try await journal { try $0.complete(entry.id, etag: completion.etag) }
        } catch {
            // The server has the write but the journal could not say so: it is sent again next time,
            // which the idempotency key (or the 412 check) makes harmless.
            configuration.logger.error("Outbox: could not record the completion of \(entry.label): \(error)")
            return .deferred
        }
        configuration.logger.debug(
            "Outbox: \(entry.label) done (\(completion.status)\(completion.alreadyApplied ? ", already applied" : ""))",
            metadata: ["outbox.entry": "\(entry.id)"])
        emit(.completed(completion))
        if let pending = try? await journal({ $0.pendingCount }) { emit(.pending(pending)) }
        return .completed
    }

    private func stop(_ entry: OutboxEntry, _ failure: OutboxFailure) async -> Outcome {
        let stored = (try? await journal { try $0.fail(entry.id, failure) }) ?? nil
        if stored == nil { _ = try? await journal { $0.release(entry.id) } }
        configuration.logger.info(
            "Outbox: \(entry.label) refused: \(failure)", metadata: ["outbox.entry": "\(entry.id)"])
        var failed = stored ?? entry
        failed.state = .failed(failure)
        emit(.failed(failed, failure))
        return failure.kind == .authentication ? .stopForAuthentication : .failed
    }

    /// The request an entry stands for, with its idempotency key and current `If-Match`.
    func makeRequest(_ entry: OutboxEntry) -> Request {
        var request = Request(
            method: HTTPRequest.Method(entry.method) ?? .post, path: entry.path,
            query: entry.query.map { URLQueryItem(name: $0.name, value: $0.value) })
        for header in entry.headers {
            if let name = HTTPField.Name(header.name) { request.headers[name] = header.value }
        }
        request.headers[.idempotencyKey] = entry.idempotencyKey
        if let ifMatch = entry.ifMatch { request.headers[.ifMatch] = ifMatch }
        if let body = entry.body {
            request.body = .data(body, contentType: entry.contentType ?? "application/json")
        }
        return request
    }

    // MARK: Lost replies

    /// After a 412: whether the server's copy of the record already is what this write makes of it,
    /// which means an earlier attempt was applied and its reply lost. `nil` for a real conflict.
    ///
    /// The rule, for a record read back with `GET` on the write's path:
    /// - `PATCH` with a JSON merge patch: applying the patch to the server's copy changes nothing.
    /// - `PUT`: every field of the body has that value in the server's copy (fields the server owns,
    ///   such as `id` or `updated_at`, may be there besides).
    /// - `DELETE`: the record is gone (404).
    func alreadyApplied(_ entry: OutboxEntry, request: Request) async -> OutboxCompletion? {
        var read = Request.get(entry.path, query: request.query)
        for field in request.headers where ![.ifMatch, .idempotencyKey, .contentType].contains(field.name) {
            read.headers[field.name] = field.value
        }
        let response: ClientResponse
        do {
            response = try await client.send(read, operationName: "outbox check \(entry.label)")
        } catch let error as OutpostError where error.status == 404 && entry.method == "DELETE" {
            return OutboxCompletion(entry: entry, status: 404, etag: nil, location: nil, body: Data(), alreadyApplied: true)
        } catch {
            return nil
        }
        guard let current = try? response.json(), let written = entry.value else { return nil }
        let applied: Bool
        switch entry.method {
        case "PATCH": applied = MergePatch.apply(written, to: current) == current
        case "PUT": applied = Self.contains(current, written)
        default: applied = false
        }
        guard applied else { return nil }
        return OutboxCompletion(
            entry: entry, status: response.status, etag: response.headerFields[.eTag],
            location: nil, body: response.body, alreadyApplied: true)
    }

    /// Whether every field of `part` (recursively, for objects) has the same value in `whole`.
    static func contains(_ whole: JSONValue, _ part: JSONValue) -> Bool {
        guard case .object(let fields) = part else { return whole == part }
        guard case .object(let wholeFields) = whole else { return false }
        for (key, value) in fields {
            guard let other = wholeFields[key], contains(other, value) else { return false }
        }
        return true
    }
}
