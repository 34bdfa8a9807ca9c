import Foundation
import Outpost
import OutpostServer
import OutpostTestSupport
import Testing

extension DjangoBrowser {
    /// An ID token django-oauth-toolkit issues to `clientID` for the signed-in user: its code flow
    /// with scope `openid`, `nonce` and PKCE, through its own pages and token endpoint.
    func idToken(clientID: String, nonce: String) async throws -> String {
        try await signIn()
        let pkce = PKCE()
        var authorize = URLComponents(
            url: server.baseURL.appendingPathComponent("o/authorize/"), resolvingAgainstBaseURL: false)!
        authorize.queryItems = [
            .init(name: "response_type", value: "code"), .init(name: "client_id", value: clientID),
            .init(name: "redirect_uri", value: "http://127.0.0.1/callback"), .init(name: "scope", value: "openid"),
            .init(name: "nonce", value: nonce), .init(name: "state", value: "s"),
            .init(name: "code_challenge", value: pkce.challenge), .init(name: "code_challenge_method", value: "S256"),
        ]
        let redirected = try await browser.get(authorize.url!.absoluteString)
        let location = try #require(redirected.header("Location"), "\(redirected.status) \(redirected.body)")
        let code = try #require(URLComponents(string: location)?.queryItems?.first { $0.name == "code" }?.value)
        let tokens = try await browser.postForm(
            server.baseURL.appendingPathComponent("o/token/").absoluteString,
            [
                "grant_type": "authorization_code", "code": code, "redirect_uri": "http://127.0.0.1/callback",
                "client_id": clientID, "code_verifier": pkce.verifier,
            ])
        return try #require(tokens.json["id_token"] as? String, "\(tokens.body)")
    }
}

@Suite(
    "Token exchange of ID tokens a stock django-oauth-toolkit OpenID provider issued",
    .enabled(if: DjangoServer.isEnabled, "set OUTPOST_INTEROP_PYTHON to the interop virtualenv's python"),
    .serialized, DjangoServerTrait(), .closesWhatItOpens)
struct FederationInteropTests {
    @Test("DOT's RS256 ID token signs in through the SDK; another audience, another nonce and a changed claim are refused")
    func exchangeDOTToken() async throws {
        let server = try #require(DjangoServer.current)
        let django = DjangoBrowser(browser: TestBrowser(), server: server)
        do {
            let nonce = SignInNonce()
            let token = try await django.idToken(clientID: "interop-oidc", nonce: nonce.value)
            let other = try await django.idToken(clientID: "interop-oidc-other", nonce: nonce.value)
            try await withAuthFixture { fixture in
                let issuer = server.baseURL.appendingPathComponent("o").absoluteString
                let client = try await fixture.withStorage { storage in
                    let providers = try #require(storage as? any UpstreamProviderStorage)
                    #expect(
                        try await providers.addUpstreamProvider(
                            UpstreamProvider(
                                name: "django", issuer: issuer, kind: .openID, clientIDs: ["interop-oidc"], createdAt: 0)))
                    return try await storage.registerClient(
                        name: "Native app", redirectURIs: [], grants: ["token_exchange"], scopes: ["records", "profile"],
                        confidential: false
                    ).client
                }
                try await fixture.withAuthenticator(client: client) { auth in
                    try await auth.signIn(idToken: token, provider: "django", nonce: nonce)
                    #expect(try await fixture.me(auth)["username"]?.stringValue == "django:1")
                }
                fixture.expectRefused(
                    try await fixture.exchange(other, client: client, provider: "django", nonce: nonce.value), "audience")
                fixture.expectRefused(
                    try await fixture.exchange(token, client: client, provider: "django", nonce: "another"), "nonce")
                // The payload changed (another subject), the signature kept: refused.
                var parts = token.split(separator: ".").map(String.init)
                let claims = try jwtParts(token).claims.merging(["sub": "2"]) { $1 }
                parts[1] = try JSONSerialization.data(withJSONObject: claims).base64EncodedString()
                    .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                    .replacingOccurrences(of: "=", with: "")
                fixture.expectRefused(
                    try await fixture.exchange(
                        parts.joined(separator: "."), client: client, provider: "django", nonce: nonce.value),
                    "signature")
            }
        } catch {
            try? await django.browser.shutdown()
            throw error
        }
        try await django.browser.shutdown()
    }
}
