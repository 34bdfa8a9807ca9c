import Foundation
@_spi(OutpostInternal) import OutpostCore
import Testing

@testable import OutpostAuth

/// A web authentication session that plays the server's pages: it reads the authorization URL and
/// comes back to the callback with a code (or whatever `answer` makes of the request).
struct ScriptedWebSession: WebAuthenticating {
    let seen = Box<[(URL, WebAuthenticationCallback)]>([])
    var answer: @Sendable (_ state: String, _ redirect: String) throws -> URL = { state, redirect in
        URL(string: "\(redirect)?code=web-code&state=\(state)")!
    }

    func authenticate(at url: URL, callback: WebAuthenticationCallback) async throws -> URL {
        seen.mutate { $0.append((url, callback)) }
        let items = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? []
        let state = items.first { $0.name == "state" }?.value ?? ""
        let redirect = items.first { $0.name == "redirect_uri" }?.value ?? ""
        return try answer(state, redirect)
    }
}

@Suite("Web authentication session sign-in")
struct WebAuthenticationTests {
    @Test("the callback follows the redirect URI: a custom scheme, or an https host and path; http is refused")
    func callbacks() throws {
        #expect(try WebAuthenticationCallback(redirectURI: URL(string: "MyApp://oauth/callback")!) == .customScheme("myapp"))
        #expect(
            try WebAuthenticationCallback(redirectURI: URL(string: "https://Example.com/oauth/done")!)
                == .https(host: "example.com", path: "/oauth/done"))
        #expect(
            try WebAuthenticationCallback(redirectURI: URL(string: "https://example.com")!)
                == .https(host: "example.com", path: "/"))
        #expect {
            _ = try WebAuthenticationCallback(redirectURI: URL(string: "http://127.0.0.1/callback")!)
        } throws: { ($0 as? AuthError)?.code == .notConfigured }

        let scheme = WebAuthenticationCallback.customScheme("myapp")
        #expect(scheme.matches(URL(string: "myapp://oauth/callback?code=1")!))
        #expect(!scheme.matches(URL(string: "other://oauth/callback")!))
        let https = WebAuthenticationCallback.https(host: "example.com", path: "/oauth/done")
        #expect(https.matches(URL(string: "https://EXAMPLE.com/oauth/done?code=1")!))
        #expect(!https.matches(URL(string: "https://example.com/elsewhere")!))
        #expect(!https.matches(URL(string: "http://example.com/oauth/done")!))
    }

    @Test("the session's redirect is checked and exchanged with the PKCE verifier, like a custom-scheme redirect")
    func signsIn() async throws {
        let transport = authServer { _ in .token("at-web", refresh: "rt-web") }
        let store = InMemoryCredentialStore()
        let auth = makeAuthenticator(transport, store: store)
        let session = ScriptedWebSession()
        let credential = try await auth.signInWithWebAuthentication(session)
        #expect(credential.accessToken == "at-web")
        #expect(await store.load(account: "cli")?.accessToken == "at-web")
        let (url, callback) = try #require(session.seen.value.first)
        #expect(callback == .customScheme("myapp"))
        let items = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? []
        #expect(items.first { $0.name == "code_challenge_method" }?.value == "S256")
        let form = try #require(transport.requests.first?.form)
        #expect(form["code"] == "web-code")
        #expect(form["redirect_uri"] == "myapp://oauth/callback")
        #expect(form["code_verifier"]?.count == 43)
    }

    @Test("another state, another address, a closed sheet: refused without a token request, the request forgotten")
    func refusals() async throws {
        let transport = authServer { _ in .token("never") }
        let auth = makeAuthenticator(transport)

        var forged = ScriptedWebSession()
        forged.answer = { _, redirect in URL(string: "\(redirect)?code=c&state=someone-else")! }
        await #expect { try await auth.signInWithWebAuthentication(forged) } throws: {
            ($0 as? AuthError)?.code == .stateMismatch
        }

        var elsewhere = ScriptedWebSession()
        elsewhere.answer = { state, _ in URL(string: "evil://oauth/callback?code=c&state=\(state)")! }
        await #expect { try await auth.signInWithWebAuthentication(elsewhere) } throws: {
            ($0 as? AuthError)?.code == .invalidRedirect
        }

        var closed = ScriptedWebSession()
        closed.answer = { _, _ in throw AuthError(.cancelled, "closed") }
        await #expect { try await auth.signInWithWebAuthentication(closed) } throws: {
            ($0 as? AuthError)?.code == .cancelled
        }

        var declined = ScriptedWebSession()
        declined.answer = { state, redirect in URL(string: "\(redirect)?error=access_denied&state=\(state)")! }
        await #expect { try await auth.signInWithWebAuthentication(declined) } throws: {
            ($0 as? AuthError)?.code == .accessDenied
        }
        #expect(transport.requests.isEmpty)
        #expect(try await auth.credential() == nil)
    }

    @Test("an http (loopback) redirect URI is refused before anything is shown")
    func loopbackRefused() async throws {
        let registration = ClientRegistration(clientID: "cli", redirectURI: URL(string: "http://127.0.0.1/callback"))
        let auth = makeAuthenticator(authServer { _ in .token("never") }, registration: registration)
        let session = ScriptedWebSession()
        await #expect { try await auth.signInWithWebAuthentication(session) } throws: {
            ($0 as? AuthError)?.code == .notConfigured
        }
        #expect(session.seen.value.isEmpty)
    }
}
