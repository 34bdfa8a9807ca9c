public import Foundation

/// A transfer started by ``BackgroundFiles``, in this launch of the app or an earlier one.
public struct BackgroundTransfer: Sendable, Hashable {
    /// Whether bytes go to the server or come from it.
    public enum Kind: Sendable, Hashable {
        case upload, download
    }

    /// The transfer's id: the upload id of an upload (pass it to ``OutpostFiles/upload(from:as:contentType:uploadID:)``
    /// to finish a failed upload in the foreground), a random id for a download.
    public var id: String
    public var kind: Kind
    /// The file's name on the server.
    public var name: String
    /// The local file: the source of an upload, the destination of a download.
    public var file: URL
}

/// How far a background transfer has come. ``progress`` never decreases within a launch of the app.
public struct BackgroundTransferProgress: Sendable, Equatable {
    public var transfer: BackgroundTransfer
    public var progress: FileTransferProgress
}

/// How a background transfer ended.
public struct BackgroundTransferResult: Sendable {
    /// What a transfer did.
    public enum Outcome: Sendable {
        case uploaded(FileUploadResult)
        case downloaded(FileDownloadResult)
        /// The server's refusal or the failure that ended the transfer once its automatic
        /// resumptions were used up. What was moved stays: a foreground transfer of the same file
        /// (with the same upload id, to the same destination) goes on from there.
        case failed(OutpostError)
    }

    /// The transfer; `nil` when a task's description could not be read (a task that Outpost did
    /// not start, or a description that was tampered with), and the outcome says why.
    public var transfer: BackgroundTransfer?
    public var outcome: Outcome
}
