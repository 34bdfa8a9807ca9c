#if os(iOS) || os(macOS) || os(tvOS) || os(visionOS)
    import AuthenticationServices
    import Foundation

    /// Sign in with Apple in the app, with `ASAuthorizationAppleIDProvider`: shows Apple's sheet and
    /// returns the identity token and authorization code, for
    /// ``Authenticator/signIn(idToken:provider:nonce:scopes:)``.
    ///
    /// ```swift
    /// let nonce = SignInNonce()
    /// let apple = try await AppleIDSignIn(anchor: window).request(nonce: nonce)
    /// try await authenticator.signIn(idToken: apple.identityToken, provider: "apple", nonce: nonce)
    /// ```
    ///
    /// Apple gives the name and e-mail address on the first sign-in only; keep them then.
    @MainActor
    public final class AppleIDSignIn: NSObject {
        /// What Apple answered.
        public struct Result: Sendable {
            /// The ID token (a JWT) Apple signed; its `nonce` claim is ``SignInNonce/sha256``.
            public var identityToken: String
            /// A short-lived code the server can redeem at Apple's token endpoint.
            public var authorizationCode: String?
            /// Apple's stable id for the person in this team (the token's `sub`).
            public var user: String
            /// First sign-in only: the address the person chose (perhaps a private relay address).
            public var email: String?
            /// First sign-in only.
            public var fullName: PersonNameComponents?
        }

        private let anchor: ASPresentationAnchor
        private var continuation: CheckedContinuation<Result, any Error>?

        /// - Parameter anchor: The window Apple's sheet is shown over.
        public init(anchor: ASPresentationAnchor) {
            self.anchor = anchor
        }

        /// Shows Apple's sign-in and returns its answer; the request carries `nonce.sha256`.
        ///
        /// - Throws: ``AuthError`` ``AuthError/Code/cancelled`` when the person closed the sheet, or
        ///   with Apple's error underneath.
        public func request(
            scopes: [ASAuthorization.Scope] = [.fullName, .email], nonce: SignInNonce
        ) async throws -> Result {
            let request = ASAuthorizationAppleIDProvider().createRequest()
            request.requestedScopes = scopes
            request.nonce = nonce.sha256
            let controller = ASAuthorizationController(authorizationRequests: [request])
            controller.delegate = self
            controller.presentationContextProvider = self
            return try await withCheckedThrowingContinuation { continuation in
                self.continuation = continuation
                controller.performRequests()
            }
        }

        private func finish(_ outcome: Swift.Result<Result, any Error>) {
            continuation?.resume(with: outcome)
            continuation = nil
        }
    }

    extension AppleIDSignIn: ASAuthorizationControllerDelegate, ASAuthorizationControllerPresentationContextProviding {
        public nonisolated func authorizationController(
            controller: ASAuthorizationController, didCompleteWithAuthorization authorization: ASAuthorization
        ) {
            let credential = authorization.credential as? ASAuthorizationAppleIDCredential
            let token = credential?.identityToken.map { String(decoding: $0, as: UTF8.self) }
            let code = credential?.authorizationCode.map { String(decoding: $0, as: UTF8.self) }
            let user = credential?.user
            let email = credential?.email
            let name = credential?.fullName
            MainActor.assumeIsolated {
                guard let token, let user else {
                    finish(.failure(AuthError(.invalidGrant, "Apple answered without an identity token")))
                    return
                }
                finish(
                    .success(Result(identityToken: token, authorizationCode: code, user: user, email: email, fullName: name)))
            }
        }

        public nonisolated func authorizationController(
            controller: ASAuthorizationController, didCompleteWithError error: any Error
        ) {
            let cancelled = (error as? ASAuthorizationError)?.code == .canceled
            let message = error.localizedDescription
            MainActor.assumeIsolated {
                finish(
                    .failure(
                        cancelled
                            ? AuthError(.cancelled, "Sign in with Apple was cancelled")
                            : AuthError(.invalidGrant, "Sign in with Apple failed: \(message)")))
            }
        }

        public nonisolated func presentationAnchor(for controller: ASAuthorizationController) -> ASPresentationAnchor {
            MainActor.assumeIsolated { anchor }
        }
    }
#endif
