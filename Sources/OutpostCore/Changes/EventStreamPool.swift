#if os(Linux) || os(Android) || os(Windows) || os(OpenBSD)
    import AsyncHTTPClient
    import Synchronization

    /// Where an `AsyncHTTPClientTransport` opens its streams (change feeds, which do not end, and file
    /// transfers, which may take long): an
    /// `HTTPClient` of their own, made on the first stream, so that they never hold the connections
    /// of the request pool.
    ///
    /// Each open stream keeps one HTTP/1.1 connection for as long as it lasts. On the request pool
    /// (8 connections per host by default) a client subscribed to the changes of 8 types would
    /// leave no connection for its other requests, which would wait until they fail with
    /// AsyncHTTPClient's `getConnectionFromPoolTimeout`. The stream pool has the request pool's
    /// configuration but room for ``maxStreamsPerHost`` connections per host.
    ///
    /// A transport over a borrowed `HTTPClient` has no configuration to copy: its streams use the
    /// borrowed client, whose pool its owner sizes.
    final class EventStreamPool: Sendable {
        /// Streams open at once to one host before a further one waits for a connection.
        static let maxStreamsPerHost = 1024

        private let configuration: HTTPClient.Configuration?
        private let state = Mutex<(client: HTTPClient?, closed: Bool)>((nil, false))

        /// `configuration`: the request pool's, or `nil` when the transport borrows its client.
        init(configuration: HTTPClient.Configuration?) {
            guard var configuration else {
                self.configuration = nil
                return
            }
            configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = max(
                configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit, Self.maxStreamsPerHost)
            self.configuration = configuration
        }

        /// The client a stream runs on: the stream pool's (made now if needed), or `fallback` when
        /// the transport borrows its client or was shut down.
        func client(fallback: HTTPClient) -> HTTPClient {
            guard let configuration else { return fallback }
            return state.withLock { state in
                if state.closed { return fallback }
                if let client = state.client { return client }
                let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
                state.client = client
                return client
            }
        }

        deinit {
            // Its transport was released without `shutdown()`: see `AsyncHTTPClientTransport.deinit`.
            if let client = state.withLock({ $0.client.take() }) { _ = client.shutdown() }
        }

        /// Shuts the stream pool down (ending its streams); none is made afterwards.
        func shutdown() async throws {
            let client = state.withLock { state in
                state.closed = true
                return state.client.take()
            }
            try await client?.shutdown()
        }
    }
#endif
