import Crypto
import Foundation
import JWTKit
import Logging
import Outpost
import OutpostServer
import OutpostTestSupport
import Synchronization
import Testing

extension AuthFixture {
    /// A public client allowed `openid` (the fixture's own clients are not).
    func openIDClient() async throws -> OAuthClient {
        try await withStorage { storage in
            try await storage.registerClient(
                name: "OIDC app", redirectURIs: [AuthFixture.redirect, "outpost-test://x-callback-url/oauth"],
                grants: ["authorization_code", "refresh_token", "password"], scopes: ["openid", "profile", "records"],
                confidential: false
            ).client
        }
    }

    /// The browser half of the code flow by hand: the sign-in page, the form, the redirect. Returns the code.
    func authorizationCode(client: OAuthClient, scope: String, nonce: String?, pkce: PKCE) async throws -> String {
        var query = [
            ("response_type", "code"), ("client_id", client.id), ("redirect_uri", AuthFixture.redirect), ("state", "s1"),
            ("scope", scope), ("code_challenge", pkce.challenge), ("code_challenge_method", "S256"),
        ]
        if let nonce { query.append(("nonce", nonce)) }
        let encoded = query.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")" }
        let form = try await browser.get(base + "/oauth/authorize?" + encoded.joined(separator: "&"))
        #expect(form.status == 200)
        if scope.split(separator: " ").contains("openid") {
            #expect(form.body.contains("Know who you are: your account id and when you signed in"))
        }
        var fields = form.hiddenFields
        fields["username"] = "ada"
        fields["password"] = AuthFixture.password
        fields["decision"] = "allow"
        let redirected = try await browser.postForm(base + "/oauth/authorize", fields)
        let location = try #require(redirected.header("Location"))
        return try #require(URLComponents(string: location)?.queryItems?.first { $0.name == "code" }?.value)
    }

    /// The whole code flow by hand; returns the token response.
    func codeFlowTokens(client: OAuthClient, scope: String, nonce: String?) async throws -> [String: Any] {
        let pkce = PKCE()
        let code = try await authorizationCode(client: client, scope: scope, nonce: nonce, pkce: pkce)
        let page = try await token([
            "grant_type": "authorization_code", "code": code, "redirect_uri": AuthFixture.redirect, "client_id": client.id,
            "code_verifier": pkce.verifier,
        ])
        #expect(page.status == 200, "\(page.body)")
        return page.json
    }

    /// An authenticator for `client` asking for openid; its HTTP client is shut down however `body` ends
    /// (a client left open would crash the test process and hide the failure).
    func withOpenIDAuthenticator<T>(client: OAuthClient, _ body: (Authenticator) async throws -> T) async throws -> T {
        try await withAuthenticator(client: client, scopes: ["openid", "profile", "records"], body)
    }

    func jwks() async throws -> [[String: Any]] {
        try #require((try await browser.get(base + "/.well-known/jwks.json").json["keys"]) as? [[String: Any]])
    }
}

/// Reads a JWT's header and payload without checking anything.
func jwtParts(_ token: String) throws -> (header: [String: Any], claims: [String: Any]) {
    let parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
    try #require(parts.count == 3)
    func decode(_ part: String) throws -> [String: Any] {
        var base64 = part.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        let data = try #require(Data(base64Encoded: base64))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }
    return (try decode(parts[0]), try decode(parts[1]))
}

/// `at_hash` computed here, independently of the server and the SDK.
func expectedAtHash(_ accessToken: String) -> String {
    Data(SHA256.hash(data: Data(accessToken.utf8)).prefix(16)).base64EncodedString()
        .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
}

/// Verifies an ID token's signature with jwt-kit against the server's JWKS, apart from the SDK.
struct AnyPayload: JWTPayload {
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

@Suite("OpenID Connect against the live server", .closesWhatItOpens)
struct OpenIDIntegrationTests {
    @Test("authorization code + openid: an RS256 id_token with kid and typ, every required claim, nonce and at_hash")
    func codeFlowIDToken() async throws {
        try await withAuthFixture { fixture in
            let client = try await fixture.openIDClient()
            let tokens = try await fixture.codeFlowTokens(client: client, scope: "openid profile", nonce: "n-0S6_WzA2Mj")
            let idToken = try #require(tokens["id_token"] as? String)
            let accessToken = try #require(tokens["access_token"] as? String)
            let (header, claims) = try jwtParts(idToken)
            #expect(header["alg"] as? String == "RS256")
            #expect(header["typ"] as? String == "JWT")
            let kid = try #require(header["kid"] as? String)
            let keys = try await fixture.jwks()
            #expect(keys.contains { $0["kid"] as? String == kid })

            let user = try await fixture.withStorage { try await $0.user(username: "ada") }
            #expect(claims["iss"] as? String == fixture.base)
            #expect(claims["sub"] as? String == user?.id)
            #expect(claims["aud"] as? String == client.id)
            #expect(claims["nonce"] as? String == "n-0S6_WzA2Mj")
            #expect(claims["at_hash"] as? String == expectedAtHash(accessToken))
            let now = Int(Date().timeIntervalSince1970)
            let iat = try #require(claims["iat"] as? Int)
            let exp = try #require(claims["exp"] as? Int)
            let authTime = try #require(claims["auth_time"] as? Int)
            #expect(abs(iat - now) < 60)
            #expect(exp == iat + 3600)
            #expect(authTime <= iat && iat - authTime < 60)

            // The signature verifies with jwt-kit against the published JWKS.
            let jwks = try await fixture.browser.get(fixture.base + "/.well-known/jwks.json").body
            let collection = try await JWTKeyCollection().add(jwksJSON: jwks)
            _ = try await collection.verify(idToken, as: AnyPayload.self)
            // ...and not once a claim is changed.
            let parts = idToken.split(separator: ".").map(String.init)
            let forgedClaims = try JSONSerialization.data(withJSONObject: claims.merging(["sub": "u_mallory"]) { $1 })
            let forged = [
                parts[0],
                forgedClaims.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(
                    of: "/", with: "_"
                )
                .replacingOccurrences(of: "=", with: ""),
                parts[2],
            ].joined(separator: ".")
            await #expect(throws: (any Error).self) { _ = try await collection.verify(forged, as: AnyPayload.self) }
        }
    }

    @Test("no id_token without the openid scope, nor from the password grant")
    func noIDTokenWithoutOpenID() async throws {
        try await withAuthFixture { fixture in
            let client = try await fixture.openIDClient()
            let tokens = try await fixture.codeFlowTokens(client: client, scope: "records profile", nonce: "unused")
            #expect(tokens["access_token"] is String)
            #expect(tokens["id_token"] == nil)

            let password = try await fixture.token([
                "grant_type": "password", "username": "ada", "password": AuthFixture.password, "client_id": client.id,
                "scope": "openid",
            ])
            #expect(password.status == 200)
            #expect(password.json["id_token"] == nil)
        }
    }

    @Test("a browser-session sign-in keeps the original auth_time; a code without a nonce gives a token without one")
    func sessionAuthTime() async throws {
        try await withAuthFixture { fixture in
            let client = try await fixture.openIDClient()
            let first = try jwtParts(
                try #require(try await fixture.codeFlowTokens(client: client, scope: "openid", nonce: "a")["id_token"] as? String)
            )
            let second = try jwtParts(
                try #require(try await fixture.codeFlowTokens(client: client, scope: "openid", nonce: nil)["id_token"] as? String)
            )
            #expect(second.claims["nonce"] == nil)
            let firstAuth = try #require(first.claims["auth_time"] as? Int)
            let secondAuth = try #require(second.claims["auth_time"] as? Int)
            // The second sign-in rides the browser session the first one started: the same second.
            #expect(secondAuth == firstAuth)
        }
    }

    @Test("the SDK signs in with openid: nonce round trip, verified claims, UserInfo with the same sub")
    func sdkSignIn() async throws {
        try await withAuthFixture { fixture in
            let client = try await fixture.openIDClient()
            try await fixture.withOpenIDAuthenticator(client: client) { auth in
                let request = try await auth.authorizationRequest()
                let nonce = try #require(request.nonce)
                #expect(request.url.query?.contains("nonce=") == true)
                let locations = Mutex<String?>(nil)
                try await ScriptedBrowser(
                    browser: fixture.browser, onRedirect: { location in locations.withLock { $0 = location } }
                )
                .open(request.url)
                let location = try #require(locations.withLock { $0 })
                let credential = try await auth.completeAuthorization(from: try #require(URL(string: location)))
                let idToken = try #require(credential.idToken)
                let user = try await fixture.withStorage { try await $0.user(username: "ada") }
                #expect(idToken.claims.subject == user?.id)
                #expect(idToken.claims.nonce == nonce)
                #expect(idToken.claims.issuer == fixture.base)
                #expect(idToken.claims.audience == [client.id])
                #expect(idToken.claims.accessTokenHash == expectedAtHash(credential.accessToken))
                #expect(idToken.claims.authTime != nil)

                let info = try await auth.userInfo()
                #expect(info["sub"] == .string(user?.id ?? ""))
                #expect(info["preferred_username"] == "ada")

                // The loopback flow asks for openid too when the registration does.
                let again = try await auth.signInWithBrowser()
                #expect(again.idToken?.claims.subject == user?.id)
            }
        }
    }

    @Test("UserInfo: GET and POST with a bearer token; 401 without one, 403 without the openid scope")
    func userInfo() async throws {
        try await withAuthFixture { fixture in
            let client = try await fixture.openIDClient()
            let tokens = try await fixture.codeFlowTokens(client: client, scope: "openid", nonce: nil)
            let accessToken = try #require(tokens["access_token"] as? String)
            let posted = try await fixture.browser.postForm(
                fixture.base + "/userinfo", [:], authorization: "Bearer \(accessToken)")
            #expect(posted.status == 200, "\(posted.body)")
            #expect(posted.json["sub"] is String)
            #expect(posted.json["preferred_username"] == nil, "profile was not granted")
            let inBody = try await fixture.browser.postForm(fixture.base + "/userinfo", ["access_token": accessToken])
            #expect(inBody.status == 200)
            #expect(inBody.json["sub"] as? String == posted.json["sub"] as? String)

            let anonymous = try await fixture.browser.get(fixture.base + "/userinfo")
            #expect(anonymous.status == 401)
            #expect(anonymous.header("WWW-Authenticate")?.hasPrefix("Bearer") == true)

            let noOpenID = try await fixture.codeFlowTokens(client: client, scope: "records", nonce: nil)
            let refused = try await fixture.browser.postForm(
                fixture.base + "/userinfo", [:], authorization: "Bearer \(try #require(noOpenID["access_token"] as? String))")
            #expect(refused.status == 403)
            #expect(refused.header("WWW-Authenticate")?.contains("insufficient_scope") == true)
        }
    }

    @Test("the discovery document names the OpenID endpoints and what they support")
    func discoveryDocument() async throws {
        try await withAuthFixture { fixture in
            let page = try await fixture.browser.get(fixture.base + "/.well-known/openid-configuration")
            #expect(page.status == 200)
            let metadata = page.json
            #expect(metadata["issuer"] as? String == fixture.base)
            #expect(metadata["authorization_endpoint"] as? String == fixture.base + "/oauth/authorize")
            #expect(metadata["token_endpoint"] as? String == fixture.base + "/oauth/token")
            #expect(metadata["userinfo_endpoint"] as? String == fixture.base + "/userinfo")
            #expect(metadata["jwks_uri"] as? String == fixture.base + "/.well-known/jwks.json")
            #expect((metadata["response_types_supported"] as? [String])?.contains("code") == true)
            #expect(metadata["subject_types_supported"] as? [String] == ["public"])
            #expect((metadata["id_token_signing_alg_values_supported"] as? [String])?.contains("RS256") == true)
            #expect((metadata["scopes_supported"] as? [String])?.contains("openid") == true)
            let claims = metadata["claims_supported"] as? [String] ?? []
            for claim in ["sub", "iss", "aud", "exp", "iat", "auth_time", "nonce", "at_hash"] { #expect(claims.contains(claim)) }
            #expect(metadata["code_challenge_methods_supported"] as? [String] == ["S256"])
            #expect((metadata["grant_types_supported"] as? [String])?.contains("authorization_code") == true)
            #expect((metadata["token_endpoint_auth_methods_supported"] as? [String])?.contains("none") == true)

            // The RFC 8414 metadata names the keys and UserInfo too, so plain OAuth discovery finds them.
            let oauth = try await fixture.browser.get(fixture.base + "/.well-known/oauth-authorization-server").json
            #expect(oauth["jwks_uri"] as? String == fixture.base + "/.well-known/jwks.json")
            #expect(oauth["userinfo_endpoint"] as? String == fixture.base + "/userinfo")
            #expect(oauth["issuer"] as? String == metadata["issuer"] as? String)

            // The SDK discovers it when the registration asks for openid.
            let http = OutpostClient(configuration: .init(baseURL: fixture.server.baseURL))
            let discovered = try? await Authenticator.discover(
                issuer: fixture.server.baseURL, client: http,
                registration: ClientRegistration(clientID: "outpost-cli", scopes: ["openid"]))
            try await http.shutdown()
            #expect(discovered?.configuration.endpoints.jwks?.absoluteString == fixture.base + "/.well-known/jwks.json")
            #expect(discovered?.configuration.endpoints.userInfo?.absoluteString == fixture.base + "/userinfo")
        }
    }

    @Test("the JWKS publishes public RSA signing keys only")
    func jwks() async throws {
        try await withAuthFixture { fixture in
            let keys = try await fixture.jwks()
            #expect(keys.count == 1)
            for key in keys {
                #expect(key["kty"] as? String == "RSA")
                #expect(key["use"] as? String == "sig")
                #expect(key["alg"] as? String == "RS256")
                #expect((key["kid"] as? String)?.isEmpty == false)
                #expect((key["n"] as? String)?.count ?? 0 >= 342)  // 2048 bits
                #expect(key["e"] as? String == "AQAB")
                for secret in ["d", "p", "q", "dp", "dq", "qi"] { #expect(key[secret] == nil) }
            }
        }
    }

    @Test("key rotation: the old key stays published so earlier tokens verify; new tokens and refreshes use the new kid")
    func rotation() async throws {
        try await withAuthFixture { fixture in
            let client = try await fixture.openIDClient()
            try await fixture.withOpenIDAuthenticator(client: client) { auth in
                let before = try await auth.signInWithBrowser()
                let oldToken = try #require(before.idToken)
                let oldKid = try #require(try jwtParts(oldToken.rawValue).header["kid"] as? String)

                let (rotated, _) = try await fixture.withStorage { try await $0.rotateSigningKey() }
                #expect(rotated.kid != oldKid)
                let kids = try await fixture.jwks().compactMap { $0["kid"] as? String }
                #expect(Set(kids) == [oldKid, rotated.kid])

                // The token signed before the rotation still verifies against the new JWKS.
                let verifier = IDTokenVerifier(
                    issuer: fixture.base, clientID: client.id,
                    keySet: { Data(try await fixture.browser.get(fixture.base + "/.well-known/jwks.json").body.utf8) })
                _ = try await verifier.verify(oldToken.rawValue, nonce: oldToken.claims.nonce)

                // A refresh returns a new ID token under the new kid: same sub and auth_time, no nonce.
                let refreshed = try await auth.refresh()
                let refreshedToken = try #require(refreshed.idToken)
                #expect(try jwtParts(refreshedToken.rawValue).header["kid"] as? String == rotated.kid)
                #expect(refreshedToken.claims.subject == oldToken.claims.subject)
                #expect(refreshedToken.claims.authTime == oldToken.claims.authTime)
                #expect(refreshedToken.claims.nonce == nil)
                #expect(refreshedToken.claims.accessTokenHash == expectedAtHash(refreshed.accessToken))

                // A new sign-in signs with the new kid too.
                let after = try await auth.signInWithBrowser()
                #expect(try jwtParts(try #require(after.idToken).rawValue).header["kid"] as? String == rotated.kid)

                // Rotating again with no grace deletes the key retired earlier; the server (24 h grace)
                // still publishes the one just retired.
                let (third, removed) = try await fixture.withStorage { try await $0.rotateSigningKey(gracePeriod: .zero) }
                #expect(removed == 1)
                #expect(Set(try await fixture.jwks().compactMap { $0["kid"] as? String }) == [third.kid, rotated.kid])
            }
        }
    }

    @Test("the migration lets the built-in outpost-cli client ask for openid")
    func cliClientScopes() async throws {
        try await withAuthFixture { fixture in
            let cli = try await fixture.withStorage { try await $0.client(id: OutpostServer.cliClientID) }
            #expect(cli?.scopes == ["records", "profile", "openid"])
        }
    }

    @Test("prompt=none answers login_required without a browser session, consent_required with one")
    func promptNone() async throws {
        try await withAuthFixture { fixture in
            let client = try await fixture.openIDClient()
            let redirect = AuthFixture.redirect.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
            let query =
                "response_type=code&client_id=\(client.id)&redirect_uri=\(redirect)&scope=openid&state=s9&code_challenge=\(PKCE().challenge)&code_challenge_method=S256&prompt=none"
            let anonymous = try await fixture.browser.get(fixture.base + "/oauth/authorize?" + query)
            #expect(anonymous.status == 302)
            let first = URLComponents(string: anonymous.header("Location") ?? "")?.queryItems ?? []
            #expect(first.first { $0.name == "error" }?.value == "login_required")
            #expect(first.first { $0.name == "state" }?.value == "s9")

            _ = try await fixture.codeFlowTokens(client: client, scope: "openid", nonce: nil)  // leaves a browser session
            let signedIn = try await fixture.browser.get(fixture.base + "/oauth/authorize?" + query)
            let second = URLComponents(string: signedIn.header("Location") ?? "")?.queryItems ?? []
            #expect(second.first { $0.name == "error" }?.value == "consent_required")
            #expect(second.first { $0.name == "code" } == nil)
        }
    }

    @Test("an over-long nonce is refused at the authorization endpoint")
    func longNonce() async throws {
        try await withAuthFixture { fixture in
            let client = try await fixture.openIDClient()
            let query =
                "response_type=code&client_id=\(client.id)&redirect_uri=\(AuthFixture.redirect.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")&scope=openid&state=s&code_challenge=\(PKCE().challenge)&code_challenge_method=S256&nonce=\(String(repeating: "n", count: 600))"
            let page = try await fixture.browser.get(fixture.base + "/oauth/authorize?" + query)
            #expect(page.status == 302)
            #expect(page.header("Location")?.contains("error=invalid_request") == true)
        }
    }
}
