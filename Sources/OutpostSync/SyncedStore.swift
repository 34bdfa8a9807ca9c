public import Foundation
internal import GRDB
public import OutpostCore

/// An offline-first local copy of some record types of one account, in one SQLite file.
///
/// ```swift
/// let folder = try SyncedStore.folder(for: .standard, application: "notes", account: userID)
/// let store = try SyncedStore(folder: folder, client: client)
/// try await store.pull("notes")
/// let id = try await store.create("notes", fields: ["text": "hi"])   // pending at once
/// try await store.push()                                              // confirmed, server id
/// ```
///
/// The store is an actor so that ``pull(_:)`` and ``push()`` run one at a time (their network
/// calls suspend, and a second push interleaved with the first would send the same write twice);
/// its database is a GRDB `DatabasePool` in WAL mode, so that readers (``query(_:filter:sort:)``,
/// ``observe(_:filter:sort:)``) never wait for a pull's or a push's write.
public actor SyncedStore {
    /// The store's SQLite file, `records.sqlite` in the folder given to ``init(folder:client:policies:limits:)``.
    public nonisolated let fileURL: URL
    /// The client that pulls and pushes (its middlewares, such as authentication, apply).
    public nonisolated let client: OutpostClient?
    /// How ``push()`` resolves a conflict, per type; types not listed use ``ConflictPolicy/serverWins``.
    public nonisolated let policies: [String: ConflictPolicy]
    /// How many records the store keeps per type.
    public nonisolated let limits: SyncLimits
    /// Each conflict ``push()`` resolves, in order. The stream buffers the newest 1000 events.
    public nonisolated let conflicts: AsyncStream<ConflictEvent>
    nonisolated let conflictSink: AsyncStream<ConflictEvent>.Continuation
    nonisolated let database: DatabasePool
    /// The last pull or push, awaited by the next one so that they run one at a time.
    private var tail: Task<Void, Never>?

    /// Opens (or creates) the store in `folder`.
    ///
    /// The folder is created owner-only (0700) and the database file is owner-only (0600); on iOS,
    /// tvOS, watchOS and visionOS both are `completeUntilFirstUserAuthentication`, which SQLite's
    /// side files take from the folder. Use one folder per account: a store holds what one
    /// signed-in user may read. Other stores may open the same folder, in this process or another
    /// (an app and its extensions, through an App Group container): a write waits up to ten
    /// seconds for another's to end. See ``suspend()`` for an app that goes to the background.
    ///
    /// - Parameters:
    ///   - folder: the account's folder, e.g. from ``folder(for:application:account:)``.
    ///   - client: the client that pulls and pushes; `nil` for a store used offline only (then
    ///     ``pull(_:)`` and ``push()`` throw).
    ///   - policies: how ``push()`` resolves conflicts, per type.
    ///   - limits: how many records the store keeps per type (see ``SyncLimits`` for what is evicted).
    /// - Throws: an error when the folder cannot be created or the file is not a store's database.
    public init(
        folder: URL, client: OutpostClient? = nil, policies: [String: ConflictPolicy] = [:], limits: SyncLimits = SyncLimits()
    ) throws {
        try StoreFiles.prepare(folder: folder)
        fileURL = folder.appending(path: StoreFiles.databaseName)
        self.client = client
        self.policies = policies
        self.limits = limits
        (conflicts, conflictSink) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1000))
        database = try StoreSchema.open(fileURL)
        try StoreFiles.restrict(file: fileURL)
        LifecycleSuspension.installForApplication()
    }

    deinit { conflictSink.finish() }

    /// Runs `body` after the previous pull or push ended.
    func exclusive<T: Sendable>(_ body: @escaping @Sendable (isolated SyncedStore) async throws -> T) async throws -> T {
        let previous = tail
        let task = Task<T, any Error> {
            await previous?.value
            return try await body(self)
        }
        tail = Task { _ = try? await task.value }
        return try await task.value
    }
}
