import Foundation
import Testing

@testable import OutpostAuth

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("Browser flows: authorization code + PKCE, implicit, state, redirects")
struct BrowserFlowTests {
    @Test("the authorization URL carries PKCE S256 and a 256-bit random state")
    func authorizationURL() async throws {
        let auth = makeAuthenticator(authServer { _ in .token("x") })
        let request = try await auth.authorizationRequest()
        let query = try #require(URLComponents(url: request.url, resolvingAgainstBaseURL: false)?.queryItems)
        let fields = Dictionary(uniqueKeysWithValues: query.map { ($0.name, $0.value ?? "") })
        let pkce = try #require(request.pkce)
        #expect(request.url.path == "/oauth/authorize")
        #expect(fields["response_type"] == "code")
        #expect(fields["client_id"] == "cli")
        #expect(fields["redirect_uri"] == "myapp://oauth/callback")
        #expect(fields["scope"] == "read write")
        #expect(fields["state"] == request.state)
        #expect(request.state.count == 43)  // 32 bytes, base64url
        #expect(fields["code_challenge"] == PKCE.challenge(for: pkce.verifier))
        #expect(fields["code_challenge_method"] == "S256")
        #expect(fields["code_verifier"] == nil)
        let other = try await auth.authorizationRequest()
        #expect(other.state != request.state)
        #expect(other.pkce?.verifier != pkce.verifier)
    }

    @Test("a code redirect is exchanged with the verifier, and saved")
    func codeExchange() async throws {
        let transport = authServer { _ in .token("at-1", refresh: "rt-1") }
        let store = InMemoryCredentialStore()
        let auth = makeAuthenticator(transport, store: store)
        let request = try await auth.authorizationRequest()
        let credential = try await auth.completeAuthorization(
            from: URL(string: "myapp://oauth/callback?code=c%2Fode-1&state=\(request.state)")!)
        #expect(
            transport.requests.first?.form == [
                "grant_type": "authorization_code", "code": "c/ode-1", "redirect_uri": "myapp://oauth/callback",
                "code_verifier": request.pkce?.verifier ?? "?", "client_id": "cli",
            ])
        #expect(credential.accessToken == "at-1")
        #expect(await store.load(account: "cli") == credential)
    }

    @Test("a state mismatch, a missing state and a reused state are refused without a token request")
    func stateChecks() async throws {
        let transport = authServer { _ in .token("at-1") }
        let auth = makeAuthenticator(transport)
        let request = try await auth.authorizationRequest()
        for url in ["myapp://oauth/callback?code=c&state=forged", "myapp://oauth/callback?code=c"] {
            let thrown = await #expect(throws: AuthError.self) { try await auth.completeAuthorization(from: URL(string: url)!) }
            #expect(thrown?.code == .stateMismatch)
        }
        #expect(transport.requests.isEmpty)
        try await auth.completeAuthorization(from: URL(string: "myapp://oauth/callback?code=c&state=\(request.state)")!)
        let replay = await #expect(throws: AuthError.self) {
            try await auth.completeAuthorization(from: URL(string: "myapp://oauth/callback?code=c&state=\(request.state)")!)
        }
        #expect(replay?.code == .stateMismatch)
        #expect(transport.requests.count == 1)
    }

    @Test("error=access_denied is accessDenied; other errors are invalidRedirect with the server's code")
    func redirectErrors() async throws {
        let auth = makeAuthenticator(authServer { _ in .token("x") })
        let first = try await auth.authorizationRequest()
        let denied = await #expect(throws: AuthError.self) {
            try await auth.completeAuthorization(
                from: URL(
                    string: "myapp://oauth/callback?error=access_denied&error_description=User%20said%20no&state=\(first.state)")!
            )
        }
        #expect(denied?.code == .accessDenied)
        #expect(denied?.serverMessage == "User said no")
        let second = try await auth.authorizationRequest()
        let other = await #expect(throws: AuthError.self) {
            try await auth.completeAuthorization(
                from: URL(string: "myapp://oauth/callback?error=invalid_scope&state=\(second.state)")!)
        }
        #expect(other?.code == .invalidRedirect)
        #expect(other?.oauthError == "invalid_scope")
        let empty = await #expect(throws: AuthError.self) {
            try await auth.completeAuthorization(from: URL(string: "myapp://oauth/callback?foo=bar")!)
        }
        #expect(empty?.code == .invalidRedirect)
    }

    @Test("the implicit flow reads the token from the fragment, with no PKCE and no refresh token")
    func implicit() async throws {
        let transport = authServer { _ in .token("never") }
        let clock = FakeClock()
        let auth = makeAuthenticator(transport, clock: clock)
        let request = try await auth.authorizationRequest(responseType: .token, scopes: ["read"])
        #expect(request.url.query?.contains("response_type=token") == true)
        #expect(request.url.query?.contains("code_challenge") == false)
        let credential = try await auth.completeAuthorization(
            from: URL(
                string:
                    "myapp://oauth/callback#access_token=at%2Bimp&token_type=bearer&expires_in=120&scope=read&state=\(request.state)"
            )!)
        #expect(credential.accessToken == "at+imp")
        #expect(credential.tokenType == "Bearer")
        #expect(credential.expiresAt == clock.now.addingTimeInterval(120))
        #expect(credential.scopes == ["read"])
        #expect(credential.refreshToken == nil)
        #expect(transport.requests.isEmpty)
    }

    @Test("a token in a code flow's redirect is refused")
    func mixedResponse() async throws {
        let auth = makeAuthenticator(authServer { _ in .token("x") })
        let request = try await auth.authorizationRequest()
        let thrown = await #expect(throws: AuthError.self) {
            try await auth.completeAuthorization(
                from: URL(string: "myapp://oauth/callback#access_token=a&state=\(request.state)")!)
        }
        #expect(thrown?.code == .invalidRedirect)
    }

    @Test(
        "redirect parsing",
        arguments: [
            ("app://cb?code=a&state=s", RedirectResult.code("a", state: "s")),
            ("app://cb?error=access_denied&state=s", RedirectResult.error("access_denied", description: nil, state: "s")),
            (
                "app://cb#error=server_error&error_description=x+y&state=s",
                RedirectResult.error("server_error", description: "x y", state: "s")
            ),
            ("app://cb#access_token=t&state=s", RedirectResult.token(["access_token": "t", "state": "s"], state: "s")),
        ])
    func parsing(url: String, expected: RedirectResult) {
        #expect(RedirectResult.parse(URL(string: url)!) == expected)
    }
}

@Suite("Loopback redirect listener (real sockets on 127.0.0.1)")
struct LoopbackTests {
    static func fetch(_ url: URL) async throws -> (Int, String) {
        let (data, response) = try await URLSession.shared.data(from: url)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
    }

    @Test("answers other paths with 404, then takes the redirect on its path and answers a page")
    func receivesRedirect() async throws {
        let listener = try LoopbackRedirectListener.start(timeout: .seconds(20))
        #expect(listener.port > 0)
        #expect(listener.redirectURI.absoluteString == "http://127.0.0.1:\(listener.port)/callback")
        let (missStatus, _) = try await Self.fetch(URL(string: "http://127.0.0.1:\(listener.port)/favicon.ico")!)
        #expect(missStatus == 404)
        let (status, page) = try await Self.fetch(URL(string: "http://127.0.0.1:\(listener.port)/callback?code=abc&state=xyz")!)
        #expect(status == 200)
        #expect(page.contains("close this window"))
        let redirect = try await listener.redirect()
        let result = RedirectResult.parse(redirect)
        #expect(result == .code("abc", state: "xyz"))
    }

    @Test("gives up at its deadline with timeout")
    func timeout() async throws {
        let listener = try LoopbackRedirectListener.start(timeout: .milliseconds(200))
        let thrown = await #expect(throws: AuthError.self) { try await listener.redirect() }
        #expect(thrown?.code == .timeout)
    }

    @Test("a cancelled task is cancelled, not failed")
    func cancelled() async throws {
        let listener = try LoopbackRedirectListener.start(timeout: .seconds(30))
        let task = Task { try await listener.redirect() }
        var waits = listener.waits.makeAsyncIterator()
        await waits.next()  // redirect() is waiting
        task.cancel()
        let thrown = await #expect(throws: AuthError.self) { try await task.value }
        #expect(thrown?.code == .cancelled)
    }

    @Test("signInWithBrowser: the browser seam follows the authorization URL to the listener; the code is exchanged")
    func endToEnd() async throws {
        let transport = authServer { _ in .token("at-loop", refresh: "rt-loop") }
        // A "browser" that plays the server: read the state and redirect_uri, and call back with a code.
        let browser = RecordingBrowser { url in
            let items = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? []
            let state = items.first { $0.name == "state" }?.value ?? ""
            let redirect = items.first { $0.name == "redirect_uri" }?.value ?? ""
            Task { _ = try? await Self.fetch(URL(string: "\(redirect)?code=the-code&state=\(state)")!) }
        }
        let registration = ClientRegistration(clientID: "cli", redirectURI: URL(string: "http://127.0.0.1/callback"))
        let auth = makeAuthenticator(transport, registration: registration, browser: browser)
        let credential = try await auth.signInWithBrowser()
        #expect(credential.accessToken == "at-loop")
        let form = try #require(transport.requests.first?.form)
        #expect(form["code"] == "the-code")
        #expect(form["redirect_uri"]?.hasPrefix("http://127.0.0.1:") == true)
        #expect(form["code_verifier"]?.count == 43)
    }

    @Test("signInWithBrowser: the user declining is accessDenied; the task cancelled is cancelled")
    func declinedAndCancelled() async throws {
        let transport = authServer { _ in .token("x") }
        let browser = RecordingBrowser { url in
            let items = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? []
            let state = items.first { $0.name == "state" }?.value ?? ""
            let redirect = items.first { $0.name == "redirect_uri" }?.value ?? ""
            Task { _ = try? await Self.fetch(URL(string: "\(redirect)?error=access_denied&state=\(state)")!) }
        }
        let denied = await #expect(throws: AuthError.self) {
            try await makeAuthenticator(transport, browser: browser).signInWithBrowser()
        }
        #expect(denied?.code == .accessDenied)

        // A browser that opens the page and never comes back: cancel once the page was opened.
        let (opened, open) = AsyncStream.makeStream(of: URL.self)
        let idle = makeAuthenticator(transport, browser: RecordingBrowser { url in open.yield(url) })
        let task = Task { try await idle.signInWithBrowser() }
        var pages = opened.makeAsyncIterator()
        #expect(await pages.next()?.path.hasSuffix("/oauth/authorize") == true)
        task.cancel()
        let cancelled = await #expect(throws: AuthError.self) { try await task.value }
        #expect(cancelled?.code == .cancelled)
        #expect(transport.requests.isEmpty)
    }
}
