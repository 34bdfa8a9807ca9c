public import Foundation
public import HTTPTypes

/// Runs file transfers that may outlive the process that started them: on Apple platforms a
/// background `URLSession` (`URLSessionTransferSession`), in tests and on Linux
/// ``TransportTransferSession``.
///
/// A session only moves bytes. ``BackgroundFiles`` prepares each request (signed by the client's
/// middlewares, since the system sends it later and cannot ask for a fresh token) and reads each
/// task's description back when the task ends, possibly in a later launch of the app, to finish
/// the transfer with the same rules as ``OutpostFiles``.
public protocol BackgroundTransferSession: Sendable {
    /// The name of the session; the system gives it back when it wakes the app for the session's events.
    var identifier: String { get }

    /// Starts a task that sends the file at `file` as the body of `request`, which is sent as it is.
    ///
    /// - Parameters:
    ///   - request: the signed request, sent as it is when the system runs the task.
    ///   - file: the body; the file must stay in place until the task ends.
    ///   - taskDescription: kept with the task, and given back with each of its events, also in a
    ///     later launch.
    func startUpload(_ request: HTTPRequest, fromFile file: URL, taskDescription: String) throws

    /// Starts a task that sends `request` as it is and receives the response body into a file.
    func startDownload(_ request: HTTPRequest, taskDescription: String) throws

    /// The events of the session's tasks, those that waited for a reader first.
    ///
    /// One reader at a time: a new call ends the sequence the previous call returned, as a new
    /// launch of the app takes over the session's events from the launch before.
    func events() -> AsyncStream<BackgroundTransferEvent>
}

/// What happened to a task of a ``BackgroundTransferSession``.
public enum BackgroundTransferEvent: Sendable {
    /// Bytes of the task's body moved so far (sent for an upload, received for a download), and
    /// how many the body has, when known.
    case progress(taskDescription: String, bytes: Int64, expectedBytes: Int64?)
    /// A download task received a whole response, whatever its status. `file` holds the body and
    /// belongs to the reader of the event, who removes it.
    case downloaded(taskDescription: String, response: HTTPResponse, file: URL)
    /// An upload task sent its file and received a response, whatever its status; `body` holds at
    /// most the first 64 KiB of the response body.
    case uploaded(taskDescription: String, response: HTTPResponse, body: Data)
    /// A task ended without a response: the connection broke, it was cancelled, or the file could
    /// not be read.
    case failed(taskDescription: String, error: OutpostError)
    /// Every event the system had kept for the app has been delivered: the moment to call the
    /// completion handler the system gave the app when it woke it.
    case eventsDelivered
}
