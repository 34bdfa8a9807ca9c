/// Watches file downloads as they go out: after each piece a download hands its connection, the
/// bytes that connection still holds unsent (NIO's queue in front of the socket).
///
/// Set one in ``ServerConfiguration/downloadObserver`` (package access): the tests and the
/// benchmark measure with it that a download holds a bounded amount whatever the reader's speed.
package protocol DownloadObserver: Sendable {
    /// Whether the downloads of `name` are watched; asked once per download.
    func watches(_ name: String) -> Bool
    /// A piece of a watched download of `name` went to the connection, which holds `unsentBytes` unsent.
    func handedOver(_ name: String, unsentBytes: Int)
}
