// Apple platforms only: swift-corelibs-foundation has no background sessions.
#if os(iOS) || os(macOS) || os(tvOS) || os(watchOS) || os(visionOS)
    import Foundation
    import HTTPTypes
    import Synchronization

    /// Turns a background session's delegate messages into ``BackgroundTransferEvent``s. The session
    /// calls it on its serial delegate queue, in order.
    final class URLSessionTransferDelegate: NSObject, URLSessionDataDelegate, URLSessionDownloadDelegate, Sendable {
        let channel = BackgroundEventChannel()
        /// Where a received file goes before `didFinishDownloadingTo` returns (the system removes
        /// it from its own place then).
        let folder: URL
        /// The start of each upload task's response body, by task identifier.
        private let bodies = Mutex<[Int: Data]>([:])

        static let maxBodyBytes = 64 * 1024

        init(folder: URL) {
            self.folder = folder
        }

        func urlSession(
            _ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64,
            totalBytesExpectedToSend: Int64
        ) {
            let expected = totalBytesExpectedToSend == NSURLSessionTransferSizeUnknown ? nil : totalBytesExpectedToSend
            channel.send(.progress(taskDescription: task.taskDescription ?? "", bytes: totalBytesSent, expectedBytes: expected))
        }

        func urlSession(
            _ session: URLSession, downloadTask: URLSessionDownloadTask, didWriteData bytesWritten: Int64,
            totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64
        ) {
            let expected = totalBytesExpectedToWrite == NSURLSessionTransferSizeUnknown ? nil : totalBytesExpectedToWrite
            channel.send(
                .progress(taskDescription: downloadTask.taskDescription ?? "", bytes: totalBytesWritten, expectedBytes: expected))
        }

        /// An upload task's response body (upload tasks are data tasks), kept up to 64 KiB.
        func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
            bodies.withLock { bodies in
                var body = bodies[dataTask.taskIdentifier, default: Data()]
                body.append(data.prefix(max(0, Self.maxBodyBytes - body.count)))
                bodies[dataTask.taskIdentifier] = body
            }
        }

        /// Moves the file out of the system's place at once: it is removed when this returns.
        func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL) {
            let description = downloadTask.taskDescription ?? ""
            guard let http = downloadTask.response as? HTTPURLResponse else {
                channel.send(
                    .failed(taskDescription: description, error: OutpostError(.malformedResponse, "The reply is not HTTP")))
                return
            }
            let target = folder.appendingPathComponent(UUID().uuidString)
            do {
                try BackgroundFolder.prepare(folder)
                try FileManager.default.moveItem(at: location, to: target)
            } catch {
                channel.send(
                    .failed(
                        taskDescription: description,
                        error: OutpostError(
                            .invalidRequest, "Cannot keep a received file in \(folder.path)",
                            suggestion: "Give URLSessionTransferSession a folder the app may write to", underlying: error)))
                return
            }
            channel.send(.downloaded(taskDescription: description, response: URLSessionTransport.head(of: http), file: target))
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
            let description = task.taskDescription ?? ""
            let body = bodies.withLock { $0.removeValue(forKey: task.taskIdentifier) } ?? Data()
            if let error {
                let options = TransportOptions(timeout: .seconds(session.configuration.timeoutIntervalForResource))
                channel.send(.failed(taskDescription: description, error: URLSessionTransport.classify(error, options: options)))
            } else if task is URLSessionUploadTask {
                guard let http = task.response as? HTTPURLResponse else {
                    channel.send(
                        .failed(taskDescription: description, error: OutpostError(.malformedResponse, "The reply is not HTTP")))
                    return
                }
                channel.send(.uploaded(taskDescription: description, response: URLSessionTransport.head(of: http), body: body))
            }
            // A download task that ended without an error has delivered its file already.
        }

        /// The system has delivered every event it kept for the app.
        func urlSessionDidFinishEvents(forBackgroundURLSession session: URLSession) {
            channel.send(.eventsDelivered)
        }
    }
#endif
