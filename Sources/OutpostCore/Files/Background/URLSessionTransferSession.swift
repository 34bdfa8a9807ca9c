// Apple platforms only: swift-corelibs-foundation has no background sessions.
#if os(iOS) || os(macOS) || os(tvOS) || os(watchOS) || os(visionOS)
    public import Foundation
    public import HTTPTypes
    import HTTPTypesFoundation

    /// A ``BackgroundTransferSession`` on a background `URLSession`: the system moves the bytes in
    /// its own process, while the app is suspended or after it was terminated, and wakes or
    /// relaunches it in the background with the tasks' events.
    ///
    /// Make one per identifier, once per launch (at launch, or when the system wakes the app for the
    /// identifier), and give it to ``BackgroundFiles``. Its tasks are uploads from a file and
    /// downloads to a file, as background sessions allow.
    ///
    /// The system allows one `URLSession` per background identifier in a process: a second
    /// `URLSessionTransferSession` with an identifier already used shares the first one's session
    /// and events (its own `discretionary`, `folder` and `configure` are not used).
    public final class URLSessionTransferSession: BackgroundTransferSession {
        public let identifier: String
        /// The background session; its delegate belongs to this object.
        public let session: URLSession

        /// A background session and its delegate, made once per identifier in a process.
        final class Shared: Sendable {
            let session: URLSession
            let delegate: URLSessionTransferDelegate

            init(session: URLSession, delegate: URLSessionTransferDelegate) {
                self.session = session
                self.delegate = delegate
            }
        }

        /// Every background session made in this process, by identifier; never given up.
        static let sessions = SessionRegistry<Shared>(keepsValues: true)

        /// - Parameters:
        ///   - identifier: the same every launch, unique to this app (and its app extensions, which
        ///     use the app group's shared container for files).
        ///   - discretionary: let the system wait for a better moment (power, Wi-Fi) to move the
        ///     bytes. Default `false`; tasks started while the app is in the background are
        ///     treated as discretionary by the system anyway.
        ///   - folder: where received files are moved before the delegate returns; default: a
        ///     folder named after the identifier in Application Support, excluded from backups.
        ///   - configure: changes the configuration further (e.g. `sharedContainerIdentifier`,
        ///     `allowsCellularAccess`) before the session is made.
        public init(
            identifier: String, discretionary: Bool = false, folder: URL? = nil,
            configure: (URLSessionConfiguration) -> Void = { _ in }
        ) {
            let shared = Self.sessions.value(for: identifier) {
                let configuration = URLSessionConfiguration.background(withIdentifier: identifier)
                configuration.sessionSendsLaunchEvents = true
                configuration.isDiscretionary = discretionary
                // Outpost's HTTPCache is the one cache.
                configuration.urlCache = nil
                configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
                configure(configuration)
                let delegate = URLSessionTransferDelegate(
                    folder: folder ?? BackgroundFiles.defaultFolder(identifier + ".received"))
                // The session keeps its delegate until it is invalidated, which a background
                // session of the app's lifetime never is.
                return Shared(
                    session: URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil),
                    delegate: delegate)
            }
            self.identifier = identifier
            self.session = shared.session
            self.delegate = shared.delegate
        }

        private let delegate: URLSessionTransferDelegate

        public func startUpload(_ request: HTTPRequest, fromFile file: URL, taskDescription: String) throws {
            let task = session.uploadTask(with: try Self.urlRequest(request), fromFile: file)
            task.taskDescription = taskDescription
            task.resume()
        }

        public func startDownload(_ request: HTTPRequest, taskDescription: String) throws {
            let task = session.downloadTask(with: try Self.urlRequest(request))
            task.taskDescription = taskDescription
            task.resume()
        }

        public func events() -> AsyncStream<BackgroundTransferEvent> { delegate.channel.events() }

        static func urlRequest(_ request: HTTPRequest) throws -> URLRequest {
            guard var outgoing = URLRequest(httpRequest: request) else {
                throw OutpostError(.invalidRequest, "The request has no absolute URL")
            }
            outgoing.cachePolicy = .reloadIgnoringLocalCacheData
            return outgoing
        }
    }
#endif
