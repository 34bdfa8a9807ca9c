import Foundation
@_spi(OutpostInternal) import OutpostCore
@_spi(OutpostInternal) import OutpostSupport
import Synchronization
import Testing

@testable import OutpostAuth

/// The Keychain's item calls in memory, answering with the same statuses as `SecItem`: a
/// duplicate add, a missing update or delete, a locked device, and hooks that let a test play
/// another process writing between two calls.
final class InMemoryKeychainItems: KeychainItems {
    struct Stored: Sendable {
        var data: Data
        var accessibility: KeychainAccessibility
    }

    let items = Mutex<[KeychainItemID: Stored]>([:])
    /// Before the device's first unlock: every call answers `errSecInteractionNotAllowed`.
    let locked = Mutex(false)
    /// Groups the app is entitled to; others answer `errSecMissingEntitlement`.
    let entitledGroups: Set<String>
    /// Runs before each call, named `copy`, `add`, `update` or `delete`: another writer's move.
    let before = Mutex<[@Sendable (String, InMemoryKeychainItems) -> Void]>([])
    let calls = Mutex<[String]>([])

    init(entitledGroups: Set<String> = []) { self.entitledGroups = entitledGroups }

    private func refusal(_ call: String, _ item: KeychainItemID) -> KeychainStatus? {
        calls.withLock { $0.append(call) }
        for hook in before.withLock({ $0 }) { hook(call, self) }
        if locked.withLock({ $0 }) { return .interactionNotAllowed }
        if let group = item.accessGroup, !entitledGroups.contains(group) { return .missingEntitlement }
        return nil
    }

    func copy(_ item: KeychainItemID) -> (status: KeychainStatus, data: Data?) {
        if let refusal = refusal("copy", item) { return (refusal, nil) }
        guard let stored = items.withLock({ $0[item] }) else { return (.itemNotFound, nil) }
        return (.success, stored.data)
    }

    func add(_ item: KeychainItemID, data: Data, accessibility: KeychainAccessibility) -> KeychainStatus {
        if let refusal = refusal("add", item) { return refusal }
        return items.withLock { items in
            guard items[item] == nil else { return .duplicateItem }
            items[item] = Stored(data: data, accessibility: accessibility)
            return .success
        }
    }

    func update(_ item: KeychainItemID, data: Data, accessibility: KeychainAccessibility) -> KeychainStatus {
        if let refusal = refusal("update", item) { return refusal }
        return items.withLock { items in
            guard items[item] != nil else { return .itemNotFound }
            items[item] = Stored(data: data, accessibility: accessibility)
            return .success
        }
    }

    func delete(_ item: KeychainItemID) -> KeychainStatus {
        if let refusal = refusal("delete", item) { return refusal }
        return items.withLock { $0.removeValue(forKey: item) == nil ? .itemNotFound : .success }
    }
}

@Suite("Keychain store logic (in-memory Keychain)")
struct KeychainStoreTests {
    static func store(_ items: InMemoryKeychainItems, group: String? = nil) -> KeychainStore {
        KeychainStore(
            service: "com.example.notes", accessGroup: group, accessibility: .afterFirstUnlock, items: items,
            queue: SerialBlockingQueue())
    }

    static let ada = Credential(accessToken: "at-ada", refreshToken: "rt-ada")
    static let bob = Credential(accessToken: "at-bob", refreshToken: "rt-bob")

    @Test("save adds, save again updates, load reads, remove deletes (twice is fine); items are AfterFirstUnlock")
    func roundTrip() async throws {
        let items = InMemoryKeychainItems(entitledGroups: ["T.group"])
        let store = Self.store(items, group: "T.group")
        #expect(try await store.load(account: "ada") == nil)
        try await store.save(Self.ada, account: "ada")
        try await store.save(Self.bob, account: "ada")
        #expect(try await store.load(account: "ada") == Self.bob)
        let key = KeychainItemID(service: "com.example.notes", account: "ada", accessGroup: "T.group")
        #expect(items.items.withLock { $0[key]?.accessibility } == .afterFirstUnlock)
        try await store.remove(account: "ada")
        try await store.remove(account: "ada")
        #expect(try await store.load(account: "ada") == nil)
    }

    @Test("a locked Keychain is credentialStoreLocked on read, write and remove: never 'no credential'")
    func locked() async throws {
        let items = InMemoryKeychainItems()
        let store = Self.store(items)
        try await store.save(Self.ada, account: "ada")
        items.locked.withLock { $0 = true }
        for operation in ["load", "save", "remove"] {
            await #expect {
                switch operation {
                case "load": _ = try await store.load(account: "ada")
                case "save": try await store.save(Self.bob, account: "ada")
                default: try await store.remove(account: "ada")
                }
            } throws: { ($0 as? AuthError)?.code == .credentialStoreLocked }
        }
        items.locked.withLock { $0 = false }
        #expect(try await store.load(account: "ada") == Self.ada, "the credential was kept")
    }

    @Test("add/update race: a duplicate add updates; an update that finds the item gone adds again")
    func addUpdateRace() async throws {
        let items = InMemoryKeychainItems()
        let store = Self.store(items)
        let key = KeychainItemID(service: "com.example.notes", account: "ada", accessGroup: nil)
        let other = InMemoryKeychainItems.Stored(data: Data("other".utf8), accessibility: .whenUnlocked)
        let moves = Mutex(0)
        // Another process adds the item just before our add, then deletes it just before our update.
        items.before.withLock {
            $0.append { call, keychain in
                let move = moves.withLock { count -> Int in
                    count += 1
                    return count
                }
                if call == "add", move == 1 { keychain.items.withLock { $0[key] = other } }
                if call == "update", move == 2 { keychain.items.withLock { $0[key] = nil } }
            }
        }
        try await store.save(Self.ada, account: "ada")
        #expect(items.calls.withLock { $0 } == ["add", "update", "add"])
        items.before.withLock { $0 = [] }
        #expect(try await store.load(account: "ada") == Self.ada)
    }

    @Test("a writer that keeps losing the race gives up after a few rounds with storeFailed")
    func endlessRace() async throws {
        let items = InMemoryKeychainItems()
        let store = Self.store(items)
        let key = KeychainItemID(service: "com.example.notes", account: "ada", accessGroup: nil)
        let other = InMemoryKeychainItems.Stored(data: Data("other".utf8), accessibility: .whenUnlocked)
        items.before.withLock {
            $0.append { call, keychain in
                keychain.items.withLock { $0[key] = call == "add" ? other : nil }
            }
        }
        await #expect { try await store.save(Self.ada, account: "ada") } throws: { ($0 as? AuthError)?.code == .storeFailed }
        #expect(items.calls.withLock { $0.count } == 2 * KeychainStore.saveRounds)
    }

    @Test("concurrent saves of one account all succeed and leave one of them")
    func concurrentSaves() async throws {
        let items = InMemoryKeychainItems()
        let store = Self.store(items)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<20 {
                group.addTask { try await store.save(Credential(accessToken: "at-\(index)"), account: "ada") }
            }
            try await group.waitForAll()
        }
        let kept = try #require(try await store.load(account: "ada"))
        #expect(kept.accessToken.hasPrefix("at-"))
    }

    @Test("an access group the app is not entitled to names the entitlement to add")
    func missingEntitlement() async throws {
        let store = Self.store(InMemoryKeychainItems(), group: "T.other")
        await #expect {
            try await store.save(Self.ada, account: "ada")
        } throws: { error in
            guard let error = error as? AuthError else { return false }
            return error.code == .storeFailed && error.message.contains("keychain-access-groups")
                && error.message.contains("T.other")
        }
    }

    @Test("an item that is not a credential is storeCorrupt")
    func corrupt() async throws {
        let items = InMemoryKeychainItems()
        let key = KeychainItemID(service: "com.example.notes", account: "ada", accessGroup: nil)
        items.items.withLock { $0[key] = .init(data: Data("not json".utf8), accessibility: .afterFirstUnlock) }
        await #expect { _ = try await Self.store(items).load(account: "ada") } throws: {
            ($0 as? AuthError)?.code == .storeCorrupt
        }
    }
}
