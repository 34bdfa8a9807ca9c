#if os(iOS) || os(macOS) || os(watchOS) || os(visionOS)
    public import Foundation
    import Synchronization

    #if os(watchOS)
        import AuthenticationServices
    #else
        public import AuthenticationServices
    #endif

    /// Signs in through `ASWebAuthenticationSession`: the system's sign-in sheet, which shares
    /// Safari's cookies (unless ephemeral), works in app extensions, and hands the redirect straight
    /// back to the app. iOS, iPadOS, Mac Catalyst, macOS, watchOS and visionOS; not tvOS.
    ///
    /// ```swift
    /// let web = SystemWebAuthenticator(prefersEphemeralWebBrowserSession: true) { view.window! }
    /// try await authenticator.signInWithWebAuthentication(web)
    /// ```
    public struct SystemWebAuthenticator: WebAuthenticating {
        /// Asks the browser not to share cookies or other data with Safari, so no earlier sign-in
        /// is reused and nothing is left behind (and no "wants to use … to sign in" prompt is shown).
        /// Default: `false`.
        public var prefersEphemeralWebBrowserSession: Bool

        #if os(watchOS)
            public init(prefersEphemeralWebBrowserSession: Bool = false) {
                self.prefersEphemeralWebBrowserSession = prefersEphemeralWebBrowserSession
            }
        #else
            /// Gives the window the sign-in sheet is shown over. Called on the main actor when a
            /// session starts.
            public typealias AnchorProvider = @MainActor @Sendable () -> ASPresentationAnchor

            /// The app's window provider.
            public var anchor: AnchorProvider

            /// - Parameters:
            ///   - prefersEphemeralWebBrowserSession: See ``prefersEphemeralWebBrowserSession``.
            ///   - anchor: The window to show the sheet over, e.g. `{ view.window! }` or the key
            ///     window of the active scene.
            public init(prefersEphemeralWebBrowserSession: Bool = false, anchor: @escaping AnchorProvider) {
                self.prefersEphemeralWebBrowserSession = prefersEphemeralWebBrowserSession
                self.anchor = anchor
            }
        #endif

        public func authenticate(at url: URL, callback: WebAuthenticationCallback) async throws -> URL {
            let running = RunningWebSession()
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<URL, any Error>) in
                    Task { @MainActor in
                        running.start(
                            url: url, callback: callback, configuration: self, continuation: continuation)
                    }
                }
            } onCancel: {
                Task { @MainActor in running.cancel() }
            }
        }
    }

    /// One session, kept alive (with its presentation context) until it completes: the session
    /// holds its context provider weakly, and nothing else would hold the session.
    @MainActor
    private final class RunningWebSession {
        private var session: ASWebAuthenticationSession?
        #if !os(watchOS)
            private var context: PresentationContext?
        #endif
        private var cancelled = false
        /// The waiting sign-in, resumed once: by the session's completion handler or by ``cancel()``.
        private var pending: PendingSignIn?

        nonisolated init() {}

        func start(
            url: URL, callback: WebAuthenticationCallback, configuration: SystemWebAuthenticator,
            continuation: CheckedContinuation<URL, any Error>
        ) {
            guard !cancelled else {
                continuation.resume(throwing: AuthError(.cancelled, "The sign-in was cancelled"))
                return
            }
            let matching: ASWebAuthenticationSession.Callback =
                switch callback {
                case .customScheme(let scheme): .customScheme(scheme)
                case .https(let host, let path): .https(host: host, path: path)
                }
            let pending = PendingSignIn(continuation)
            self.pending = pending
            // @Sendable: not main-actor isolated, whatever thread the session calls it on.
            let session = ASWebAuthenticationSession(url: url, callback: matching) { @Sendable [self] redirect, error in
                Task { @MainActor in self.finish() }
                if let redirect {
                    pending.resume(.success(redirect))
                } else {
                    pending.resume(.failure(Self.authError(error)))
                }
            }
            session.prefersEphemeralWebBrowserSession = configuration.prefersEphemeralWebBrowserSession
            #if !os(watchOS)
                let context = PresentationContext(anchor: configuration.anchor())
                session.presentationContextProvider = context
                self.context = context
            #endif
            self.session = session
            guard session.start() else {
                finish()
                pending.resume(
                    .failure(
                        AuthError(
                            .browserFailed,
                            "The sign-in sheet could not be shown; is the app in the foreground with a window?")))
                return
            }
        }

        /// Closes the sheet and ends the waiting sign-in with `.cancelled` at once: Apple does not
        /// promise that the session calls its completion handler after `cancel()`.
        func cancel() {
            cancelled = true
            session?.cancel()
            pending?.resume(.failure(AuthError(.cancelled, "The sign-in was cancelled")))
            finish()
        }

        private func finish() {
            session = nil
            pending = nil
            #if !os(watchOS)
                context = nil
            #endif
        }

        nonisolated private static func authError(_ error: (any Error)?) -> AuthError {
            if let error = error as? ASWebAuthenticationSessionError {
                switch error.code {
                case .canceledLogin:
                    return AuthError(.cancelled, "The user closed the sign-in sheet", underlying: error)
                #if !os(watchOS)
                    // Not on watchOS, where a session has no presentation context.
                    case .presentationContextNotProvided, .presentationContextInvalid:
                        return AuthError(
                            .browserFailed,
                            "The sign-in sheet has no window to be shown over; pass a visible window as the anchor",
                            underlying: error)
                #endif
                default:
                    break
                }
            }
            return AuthError(.browserFailed, "The sign-in sheet failed", underlying: error)
        }
    }

    /// A sign-in's continuation, resumed exactly once, by whichever of the session's completion
    /// handler (any thread) and a cancellation (the main actor) comes first.
    private final class PendingSignIn: Sendable {
        private let continuation: Mutex<CheckedContinuation<URL, any Error>?>

        init(_ continuation: CheckedContinuation<URL, any Error>) {
            self.continuation = Mutex(continuation)
        }

        func resume(_ result: Result<URL, any Error>) {
            let waiting = continuation.withLock { waiting in
                defer { waiting = nil }
                return waiting
            }
            waiting?.resume(with: result)
        }
    }

    #if !os(watchOS)
        /// Hands the session the window the app gave, looked up when the session started.
        private final class PresentationContext: NSObject, ASWebAuthenticationPresentationContextProviding {
            private let window: ASPresentationAnchor

            init(anchor: ASPresentationAnchor) {
                window = anchor
            }

            func presentationAnchor(for session: ASWebAuthenticationSession) -> ASPresentationAnchor {
                window
            }
        }
    #endif
#endif
