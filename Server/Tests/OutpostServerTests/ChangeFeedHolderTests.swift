import Foundation
import Logging
import OutpostServerTesting
import OutpostTestSupport
import Testing

@testable import OutpostServer

/// Places among a feed's subscribers are bounded per holder and, for anonymous ones, in all.
@Suite("Change feed places per holder", .closesWhatItOpens)
struct ChangeFeedHolderTests {
    @Test("per user, per address and anonymous in all; a place left is free again; a full holder leaves others be")
    func places() async throws {
        try await StorageConformanceTests().withStorage(.sqlite) { storage, _ in
            let feedStorage = try #require(storage as? any ChangeFeedStorage)
            var configuration = ChangeFeedConfiguration(maxSubscribers: 8)
            configuration.maxAnonymousSubscribers = 3
            configuration.maxStreamsPerUser = 2
            configuration.maxStreamsPerAddress = 2
            let feed = ChangeFeed(storage: feedStorage, configuration: configuration, logger: Logger(label: "test"))
            func code(_ holder: ChangeFeed.Holder) -> String? {
                do {
                    _ = try feed.join(holder)
                    return nil
                } catch let error as ServerError {
                    return "\(error.status.code) \(error.code)"
                } catch {
                    return "\(error)"
                }
            }
            let ada = ChangeFeed.Holder.signedIn("u_ada")
            #expect(code(ada) == nil)
            let adaSecond = try feed.join(ada)
            #expect(code(ada) == "429 too_many_streams")
            #expect(code(.signedIn("u_bob")) == nil, "another user is not held back by ada's limit")
            feed.leave(adaSecond)
            #expect(code(ada) == nil, "a place left is free again")

            let first = ChangeFeed.Holder.anonymous(address: "198.51.100.1")
            #expect(code(first) == nil)
            #expect(code(first) == nil)
            #expect(code(first) == "429 too_many_streams")
            #expect(code(.anonymous(address: "198.51.100.2")) == nil)
            // Three anonymous places are taken: a fourth address finds none, a signed-in user does.
            #expect(code(.anonymous(address: "198.51.100.3")) == "503 too_many_subscribers")
            #expect(code(.signedIn("u_carol")) == nil)
            #expect(feed.subscriberCount == 7)
            #expect(code(.signedIn("u_dave")) == nil)
            #expect(code(.signedIn("u_erin")) == "503 too_many_subscribers", "maxSubscribers bounds everyone")
        }
    }
}

extension ChangeFeedHolderTests {
    @Test("a write wakes the subscribers of its type (and of every type), not those of other types")
    func wakesByType() async throws {
        try await StorageConformanceTests().withStorage(.sqlite) { storage, _ in
            let feedStorage = try #require(storage as? any ChangeFeedStorage)
            // Heartbeats an hour apart: only a write can wake anyone here.
            let feed = ChangeFeed(
                storage: feedStorage, configuration: ChangeFeedConfiguration(heartbeatInterval: .seconds(3600)),
                logger: Logger(label: "test"))
            let (notes, posts, any) = (try feed.join(), try feed.join(), try feed.join())
            // The first subscriber made the feed read the latest position: the write below is new to it.
            #expect(try await eventually(within: .seconds(10), every: .milliseconds(5)) { feed.isPrimed })
            let seen = feed.seen
            let notesWake = Task { await feed.wait(notes, seen: seen, type: "notes") }
            let postsWake = Task { await feed.wait(posts, seen: seen, type: "posts") }
            let anyWake = Task { await feed.wait(any, seen: seen) }
            #expect(try await eventually(within: .seconds(10), every: .milliseconds(5)) { feed.waitingCount == 3 })
            _ = try await storage.createRecord(type: "notes", fields: ["n": 1], owner: nil)
            feed.changesCommitted()
            #expect(await notesWake.value == .changes)
            #expect(await anyWake.value == .changes)
            #expect(feed.waitingCount == 1, "the subscriber of posts sleeps on")
            feed.close()
            #expect(await postsWake.value == .closed)
        }
    }
}
