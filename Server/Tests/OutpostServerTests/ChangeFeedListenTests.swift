import Foundation
import Logging
@_spi(OutpostInternal) import OutpostCore
import OutpostServerTesting
import OutpostTestSupport
import PostgresNIO
import Testing

@testable import OutpostServer

/// The change feed LISTENs for PostgreSQL's commit notifications only while anyone subscribes.
@Suite(
    "Change feed listens only while subscribed", .closesWhatItOpens,
    .enabled(
        if: ScratchDatabase.postgresRequired || ScratchDatabase.postgresBase != nil, "\(ScratchDatabase.postgresSkipReason ?? "")"
    ))
struct ChangeFeedListenTests {
    /// Sessions of the database whose last statement was a LISTEN (postgres-nio's UNLISTEN ends one).
    func listeners(_ storage: PostgresStorage) async throws -> Int {
        let rows = try await storage.rows(
            PostgresQuery(
                unsafeSQL: """
                    SELECT count(*) AS n FROM pg_stat_activity
                    WHERE datname = current_database() AND query ILIKE 'LISTEN %\(PostgresStorage.changesChannel)%'
                    """))
        return Int(try rows.first?["n"].decode(Int64.self) ?? 0)
    }

    /// Polls `condition` until it holds or 20 s pass (PostgreSQL shows a session's statement only
    /// once it ran; nothing signals that).
    func eventually(_ condition: () async throws -> Bool) async throws -> Bool {
        try await OutpostTestSupport.eventually(within: .seconds(20), every: .milliseconds(10), condition)
    }

    @Test("no LISTEN without subscribers; one while subscribed, which wakes on another instance's write; none after")
    func listensWhileSubscribed() async throws {
        try await StorageConformanceTests().withStorage(.postgres) { storage, database in
            let storage = try #require(storage as? PostgresStorage)
            // A poll an hour apart: only a notification can wake the subscriber in time.
            let feed = ChangeFeed(
                storage: storage, configuration: ChangeFeedConfiguration(pollInterval: .seconds(3600)),
                logger: Logger(label: "test"))
            let running = Task { try await feed.run() }
            // The feed is running, nobody subscribes: nobody listens, and writes notify nobody.
            _ = try await storage.createRecord(type: "items", fields: ["n": 1], owner: nil)
            #expect(try await listeners(storage) == 0)
            #expect(!feed.listening)

            let ticket = try feed.join()
            #expect(try await eventually { try await listeners(storage) == 1 })
            #expect(feed.listening)
            // A write through another instance on the same database reaches the subscriber.
            let other = try await database.open()
            let seen = feed.seen
            let written = try await other.createRecord(type: "items", fields: ["n": 2], owner: nil, isPrivate: false)
            var wake = await feed.wait(ticket, seen: seen)
            while wake == .heartbeat { wake = await feed.wait(ticket, seen: feed.seen) }
            #expect(wake == .changes)
            let read = try await feed.read(type: "items", after: 0, limit: 10)
            #expect(read.changes.map(\.record.id).contains(written.id))
            try await other.close()

            feed.leave(ticket)
            #expect(try await eventually { try await listeners(storage) == 0 })
            // A second subscriber listens again.
            let again = try feed.join()
            #expect(try await eventually { try await listeners(storage) == 1 })
            feed.leave(again)
            running.cancel()
            try? await running.value
            #expect(try await eventually { try await listeners(storage) == 0 })
        }
    }
}
