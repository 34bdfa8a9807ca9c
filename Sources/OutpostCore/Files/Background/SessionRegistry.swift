import Synchronization

/// One value per background session identifier for the whole process: the background
/// `URLSession` of `URLSessionTransferSession` (the system allows one session per identifier in a
/// process) and the ``BackgroundFiles`` that reads a session's events. It is the process-wide state
/// that rule needs, and nothing else.
final class SessionRegistry<Value: AnyObject & Sendable>: Sendable {
    private struct Entry: Sendable {
        let id: ObjectIdentifier
        let kept: Value?
        weak let held: Value?
        var value: Value? { kept ?? held }
    }

    private let entries = Mutex<[String: Entry]>([:])
    /// Whether the registry keeps its values alive (a background `URLSession` is never given up),
    /// or only points to them while something else keeps them.
    private let keepsValues: Bool

    init(keepsValues: Bool) {
        self.keepsValues = keepsValues
    }

    private func entry(_ value: Value) -> Entry {
        Entry(id: ObjectIdentifier(value), kept: keepsValues ? value : nil, held: value)
    }

    /// The value registered for `identifier` that `isUsable` accepts; otherwise the one `make`
    /// creates, registered in its place. `make` runs under the registry's lock: it must not use
    /// the registry.
    func value(for identifier: String, isUsable: (Value) -> Bool = { _ in true }, make: () -> Value) -> Value {
        entries.withLock { entries in
            if let existing = entries[identifier]?.value, isUsable(existing) { return existing }
            let made = make()
            entries[identifier] = entry(made)
            return made
        }
    }

    /// Registers `value` for `identifier` in place of any other; returns the one it replaces.
    @discardableResult
    func replace(_ identifier: String, with value: Value) -> Value? {
        entries.withLock { entries in
            defer { entries[identifier] = entry(value) }
            return entries[identifier]?.value
        }
    }

    /// Removes the entry of `identifier` when it is the object `id` (e.g. one that stops).
    func remove(_ identifier: String, ifItIs id: ObjectIdentifier) {
        entries.withLock { entries in
            if entries[identifier]?.id == id { entries[identifier] = nil }
        }
    }

    /// The value registered for `identifier`, if it still exists.
    func current(_ identifier: String) -> Value? {
        entries.withLock { $0[identifier]?.value }
    }
}
