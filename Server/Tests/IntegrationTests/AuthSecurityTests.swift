import Foundation
import Logging
import Outpost
import OutpostServer
import OutpostTestSupport
import Testing

extension AuthFixture {
    static let loopback = "http://127.0.0.1:53682/callback"

    /// The fixture's database, opened beside the running server.
    func withStorage<T>(_ body: (any Storage) async throws -> T) async throws -> T {
        let storage = try await server.openStorage()
        do {
            let result = try await body(storage)
            try await storage.close()
            return result
        } catch {
            try? await storage.close()
            throw error
        }
    }

    /// `/oauth/authorize?…` for the public client with PKCE, plus `extra` (already encoded).
    func authorizeURL(_ pkce: PKCE, extra: String = "&scope=records&state=s1") -> String {
        base + "/oauth/authorize?response_type=code&client_id=\(publicClient.id)&redirect_uri="
            + Self.encode(Self.loopback) + "&code_challenge=\(pkce.challenge)&code_challenge_method=S256" + extra
    }

    static func encode(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }

    /// Signs in on the consent page as ada and allows; returns the redirect's query items.
    func allow(_ url: String, in browser: TestBrowser? = nil) async throws -> [String: String] {
        let browser = browser ?? self.browser
        let form = try await browser.get(url)
        #expect(form.status == 200, "\(form.body)")
        var fields = form.hiddenFields
        fields["username"] = "ada"
        fields["password"] = AuthFixture.password
        fields["decision"] = "allow"
        let answer = try await browser.postForm(base + "/oauth/authorize", fields)
        #expect(answer.status == 303, "\(answer.body)")
        return Self.query(answer.header("Location") ?? "")
    }

    static func query(_ location: String) -> [String: String] {
        var result: [String: String] = [:]
        for item in URLComponents(string: location)?.queryItems ?? [] { result[item.name] = item.value ?? "" }
        return result
    }

    func bearer(_ path: String, token: String) async throws -> TestBrowser.Page {
        try await browser.get(base + path, authorization: "Bearer \(token)")
    }

    func passwordToken(scope: String) async throws -> String {
        let page = try await token([
            "grant_type": "password", "username": "ada", "password": Self.password, "client_id": publicClient.id, "scope": scope,
        ])
        #expect(page.status == 200, "\(page.body)")
        return page.json["access_token"] as? String ?? ""
    }
}

@Suite("The authorization server's security and interoperability", .closesWhatItOpens)
struct AuthSecurityTests {
    // MARK: Query strings and forms

    @Test("a + in the query is a space: scope=records+profile and state=two+words (Authlib's encoding)")
    func plusInQuery() async throws {
        try await withAuthFixture { fixture in
            let url = fixture.authorizeURL(PKCE(), extra: "&scope=records+profile&state=two+words")
            let page = try await fixture.browser.get(url)
            #expect(page.status == 200, "\(page.body)")
            #expect(page.hiddenFields["scope"] == "records profile")
            let answer = try await fixture.allow(url)
            #expect(answer["state"] == "two words")
            #expect(answer["code"] != nil)
        }
    }

    @Test("records list filters read + as a space")
    func plusInRecordFilters() async throws {
        try await withLiveServer { server, client in
            _ = try await client.send(.post("/records/pets", json: ["name": "two words"]))
            _ = try await client.send(.post("/records/pets", json: ["name": "other"]))
            let browser = TestBrowser()
            let page = try await browser.get(server.baseURL.absoluteString + "/records/pets?name=two+words")
            try await browser.shutdown()
            #expect(page.status == 200)
            #expect((page.json["results"] as? [Any])?.count == 1)
        }
    }

    @Test("too many or repeated parameters are a 400 with a clear error, in the query and in forms")
    func boundedParameters() async throws {
        try await withAuthFixture { fixture in
            let many = (0..<300).map { "f\($0)=1" }.joined(separator: "&")
            let list = try await fixture.browser.get(fixture.base + "/records/pets?" + many)
            #expect(list.status == 400)
            #expect((list.json["error"] as? [String: Any])?["code"] as? String == "too_many_parameters")
            let repeated = try await fixture.browser.get(fixture.base + "/records/pets?a=1&a=2")
            #expect((repeated.json["error"] as? [String: Any])?["code"] as? String == "duplicate_parameter")
            var fields: [String: String] = ["grant_type": "password"]
            for index in 0..<300 { fields["f\(index)"] = "1" }
            let form = try await fixture.token(fields)
            #expect(form.status == 400)
            #expect(form.json["error"] as? String == "invalid_request")
            #expect((form.json["error_description"] as? String)?.contains("256") == true)
            #expect(form.header("Cache-Control") == "no-store")
        }
    }

    // MARK: Forms bound to the browser

    @Test("login CSRF: a form fetched by one browser is refused when another browser posts it")
    func loginCSRF() async throws {
        try await withAuthFixture { fixture in
            let attacker = fixture.browser
            let form = try await attacker.get(fixture.authorizeURL(PKCE()))
            #expect(attacker.cookie("outpost_form") != nil)
            var fields = form.hiddenFields
            fields["username"] = "bob"
            fields["password"] = AuthFixture.password
            fields["decision"] = "allow"
            let victim = TestBrowser()
            let answer = try await victim.postForm(fixture.base + "/oauth/authorize", fields)
            let sessionCookie = victim.cookie("outpost_session")
            try await victim.shutdown()
            #expect(answer.status == 400)
            #expect(answer.header("Location") == nil)
            #expect(sessionCookie == nil, "the victim's browser must not be signed in as the attacker")
            #expect(answer.body.contains("another browser"))

            // The same for the device page.
            let device = try await attacker.get(fixture.base + "/device")
            var deviceFields = device.hiddenFields
            deviceFields["user_code"] = "BCDF-GHJK"
            deviceFields["username"] = "bob"
            deviceFields["password"] = AuthFixture.password
            let other = TestBrowser()
            let refused = try await other.postForm(fixture.base + "/device", deviceFields)
            try await other.shutdown()
            #expect(refused.status == 400)
        }
    }

    @Test("a form post from another origin (another port of 127.0.0.1 too, a rebound domain) or a cross-site fetch is refused")
    func crossOrigin() async throws {
        try await withAuthFixture { fixture in
            let url = fixture.authorizeURL(PKCE())
            var fields = try await fixture.browser.get(url).hiddenFields
            fields["username"] = "ada"
            fields["password"] = AuthFixture.password
            fields["decision"] = "allow"
            let port = fixture.server.running.port
            for headers in [
                ["Origin": "http://127.0.0.1:\(port == 1 ? 2 : 1)"], ["Origin": "http://evil.example"], ["Origin": "null"],
                ["Origin": "null", "Sec-Fetch-Site": "cross-site"], ["Sec-Fetch-Site": "cross-site"],
                ["Sec-Fetch-Site": "same-site"],
            ] {
                let refused = try await fixture.browser.postForm(fixture.base + "/oauth/authorize", fields, headers: headers)
                #expect(refused.status == 403, "\(headers)")
                #expect(refused.header("Location") == nil)
                let device = try await fixture.browser.postForm(fixture.base + "/device", ["purpose": "device"], headers: headers)
                #expect(device.status == 403, "\(headers)")
            }
            // DNS rebinding: a page of another domain that now resolves here sends that domain as both
            // Host and Origin. Without a public URL only an IP address or localhost counts as the server.
            let rebound = ["Host": "rebound.example:\(port)", "Origin": "http://rebound.example:\(port)"]
            let rebinding = try await fixture.browser.postForm(
                fixture.base + "/oauth/authorize", fields,
                headers: rebound.merging(["Sec-Fetch-Site": "same-origin"]) { a, _ in a })
            #expect(rebinding.status == 403)
            let allowed = try await fixture.browser.postForm(
                fixture.base + "/oauth/authorize", fields,
                headers: ["Origin": "http://127.0.0.1:\(port)", "Sec-Fetch-Site": "same-origin"])
            #expect(allowed.status == 303)

            // What Chromium sends for a page's own post when it hides the origin: accepted.
            var again = try await fixture.browser.get(url).hiddenFields
            again["decision"] = "allow"
            let hidden = try await fixture.browser.postForm(
                fixture.base + "/oauth/authorize", again, headers: ["Origin": "null", "Sec-Fetch-Site": "same-origin"])
            #expect(hidden.status == 303, "\(hidden.body)")
        }
    }

    // MARK: The device page

    @Test("approving a device shows the client and its access, then needs an explicit confirmation")
    func deviceConfirmation() async throws {
        try await withAuthFixture { fixture in
            let start = try await fixture.browser.postForm(
                fixture.base + "/oauth/device_authorization", ["client_id": fixture.publicClient.id, "scope": "records:read"])
            let deviceCode = try #require(start.json["device_code"] as? String)
            let userCode = try #require(start.json["user_code"] as? String)
            let poll = [
                "grant_type": "urn:ietf:params:oauth:grant-type:device_code", "device_code": deviceCode,
                "client_id": fixture.publicClient.id,
            ]
            var fields = try await fixture.browser.get(fixture.base + "/device").hiddenFields
            fields["user_code"] = userCode
            fields["username"] = "ada"
            fields["password"] = AuthFixture.password
            fields["decision"] = "allow"  // Even a forged "allow" only leads to the confirmation.
            let confirm = try await fixture.browser.postForm(fixture.base + "/device", fields)
            #expect(confirm.status == 200)
            #expect(confirm.body.contains("<strong>Test CLI</strong>"))
            #expect(confirm.body.contains("See your records"))
            #expect(confirm.body.contains("id=\"allow\""))
            #expect(confirm.hiddenFields["purpose"] == "device_confirm")
            #expect(try await fixture.token(poll).json["error"] as? String == "authorization_pending")

            var deny = confirm.hiddenFields
            deny["decision"] = "deny"
            let denied = try await fixture.browser.postForm(fixture.base + "/device", deny)
            #expect(denied.status == 200)
            #expect(denied.body.contains("was not given access"))
            #expect(try await fixture.token(poll).json["error"] as? String == "access_denied")
        }
    }

    // MARK: Public URL and issuer

    @Test("the issuer and every absolute URL follow publicURL, never the Host header")
    func publicURL() async throws {
        let public_ = "https://auth.example.test"
        try await withAuthFixture(configure: { $0.publicURL = URL(string: public_ + "/") }) { fixture in
            let spoofed = ["Host": "evil.example"]
            let metadata = try await fixture.browser.get(
                fixture.base + "/.well-known/oauth-authorization-server", headers: spoofed
            ).json
            #expect(metadata["issuer"] as? String == public_)
            #expect(metadata["token_endpoint"] as? String == public_ + "/oauth/token")
            #expect(metadata["authorization_response_iss_parameter_supported"] as? Bool == true)
            let device = try await fixture.browser.postForm(
                fixture.base + "/oauth/device_authorization", ["client_id": fixture.publicClient.id], headers: spoofed)
            #expect(device.json["verification_uri"] as? String == public_ + "/device")

            let client = OutpostClient(configuration: .init(baseURL: fixture.server.baseURL))
            for _ in 0..<3 { _ = try await client.send(.post("/records/pets", json: ["n": 1])) }
            try await client.shutdown()
            let list = try await fixture.browser.get(fixture.base + "/records/pets?limit=1", headers: spoofed)
            #expect((list.json["next"] as? String)?.hasPrefix(public_ + "/records/pets?") == true)
        }
        try await withAuthFixture { fixture in
            let metadata = try await fixture.browser.get(
                fixture.base + "/.well-known/oauth-authorization-server", headers: ["Host": "evil.example"]
            ).json
            #expect(metadata["issuer"] as? String == "http://127.0.0.1:\(fixture.server.running.port)")
        }
    }

    @Test("authorization responses carry iss (RFC 9207), codes and errors alike")
    func issInResponses() async throws {
        try await withAuthFixture { fixture in
            let issuer = "http://127.0.0.1:\(fixture.server.running.port)"
            let answer = try await fixture.allow(fixture.authorizeURL(PKCE()))
            #expect(answer["iss"] == issuer)
            let form = try await fixture.browser.get(fixture.authorizeURL(PKCE()))
            var fields = form.hiddenFields
            fields["decision"] = "deny"
            let denied = try await fixture.browser.postForm(fixture.base + "/oauth/authorize", fields)
            let query = AuthFixture.query(denied.header("Location") ?? "")
            #expect(query["error"] == "access_denied")
            #expect(query["iss"] == issuer)
        }
    }

    // MARK: Codes and PKCE

    @Test("PKCE downgrade: a code issued without a challenge is refused with a code_verifier; verifiers are 43–128 unreserved")
    func pkceDowngrade() async throws {
        try await withAuthFixture { fixture in
            let (web, secret) = try await fixture.withStorage {
                try await $0.registerClient(
                    name: "Web app", redirectURIs: ["https://app.example/cb"], grants: ["authorization_code"],
                    scopes: ["profile"], confidential: true)
            }
            let basic = "Basic " + Data("\(web.id):\(secret ?? "")".utf8).base64EncodedString()
            func code() async throws -> String {
                let url =
                    fixture.base + "/oauth/authorize?response_type=code&client_id=\(web.id)&redirect_uri="
                    + AuthFixture.encode("https://app.example/cb")
                return try #require(try await fixture.allow(url)["code"])
            }
            let downgraded = try await fixture.token(
                [
                    "grant_type": "authorization_code", "code": try await code(), "redirect_uri": "https://app.example/cb",
                    "code_verifier": PKCE().verifier,
                ], authorization: basic)
            #expect(downgraded.status == 400)
            #expect(downgraded.json["error"] as? String == "invalid_grant")
            let plain = try await fixture.token(
                ["grant_type": "authorization_code", "code": try await code(), "redirect_uri": "https://app.example/cb"],
                authorization: basic)
            #expect(plain.status == 200, "\(plain.body)")

            // A verifier of the wrong shape is refused even when its hash would match.
            let short = "abc"
            let pkce = PKCE()
            let redeemed = try await fixture.token([
                "grant_type": "authorization_code",
                "code": try #require(try await fixture.allow(fixture.authorizeURL(pkce))["code"]),
                "redirect_uri": AuthFixture.loopback, "client_id": fixture.publicClient.id, "code_verifier": short,
            ])
            #expect(redeemed.json["error"] as? String == "invalid_grant")
            #expect((redeemed.json["error_description"] as? String)?.contains("43") == true)
        }
    }

    @Test("replaying a used authorization code revokes the tokens issued from it")
    func codeReplay() async throws {
        try await withAuthFixture { fixture in
            let pkce = PKCE()
            let code = try #require(try await fixture.allow(fixture.authorizeURL(pkce, extra: "&scope=records+profile"))["code"])
            let exchange = [
                "grant_type": "authorization_code", "code": code, "redirect_uri": AuthFixture.loopback,
                "client_id": fixture.publicClient.id, "code_verifier": pkce.verifier,
            ]
            let tokens = try await fixture.token(exchange)
            #expect(tokens.status == 200)
            let access = try #require(tokens.json["access_token"] as? String)
            let refresh = try #require(tokens.json["refresh_token"] as? String)
            #expect(try await fixture.bearer("/me", token: access).status == 200)
            let replay = try await fixture.token(exchange)
            #expect(replay.json["error"] as? String == "invalid_grant")
            #expect(try await fixture.bearer("/me", token: access).status == 401)
            let refreshed = try await fixture.token([
                "grant_type": "refresh_token", "refresh_token": refresh, "client_id": fixture.publicClient.id,
            ])
            #expect(refreshed.json["error"] as? String == "invalid_grant")
        }
    }

    // MARK: The password grant

    @Test("the password grant is opt-in per client: not for outpost-cli nor clients registered without it")
    func passwordOptIn() async throws {
        try await withAuthFixture { fixture in
            let builtIn = try await fixture.token([
                "grant_type": "password", "username": "ada", "password": AuthFixture.password,
                "client_id": OutpostServer.cliClientID,
            ])
            #expect(builtIn.json["error"] as? String == "unauthorized_client")
            #expect((builtIn.json["error_description"] as? String)?.contains("--grant password") == true)
            let grants = try await fixture.withStorage { try await $0.client(id: OutpostServer.cliClientID)?.grants }
            #expect(grants == ["authorization_code", "device_code", "refresh_token"])
            let (plain, _) = try await fixture.withStorage {
                try await $0.registerClient(
                    name: "Plain", redirectURIs: [AuthFixture.redirect], grants: ["authorization_code", "refresh_token"],
                    scopes: ["profile"], confidential: false)
            }
            let refused = try await fixture.token([
                "grant_type": "password", "username": "ada", "password": AuthFixture.password, "client_id": plain.id,
            ])
            #expect(refused.json["error"] as? String == "unauthorized_client")
            let (legacy, _) = try await fixture.withStorage {
                try await $0.registerClient(
                    name: "Outpost CLI (password)", redirectURIs: [], grants: ["password", "refresh_token"],
                    scopes: ["records:read", "records:write", "profile"], confidential: false,
                    id: OutpostServer.cliPasswordClientID)
            }
            let allowed = try await fixture.token([
                "grant_type": "password", "username": "ada", "password": AuthFixture.password, "client_id": legacy.id,
            ])
            #expect(allowed.status == 200)
        }
    }

    // MARK: Rate limits

    @Test("the sign-in form says when to retry (429, Retry-After) once the limit is reached")
    func formRateLimit() async throws {
        try await withAuthFixture(configure: { $0.auth.attemptsPerAccount = 2 }) { fixture in
            let url = fixture.authorizeURL(PKCE())
            var fields = try await fixture.browser.get(url).hiddenFields
            fields["username"] = "ada"
            fields["password"] = "wrong guess"
            fields["decision"] = "allow"
            var statuses: [Int] = []
            var last: TestBrowser.Page?
            for _ in 0..<3 {
                let page = try await fixture.browser.postForm(fixture.base + "/oauth/authorize", fields)
                statuses.append(page.status)
                last = page
            }
            #expect(statuses == [401, 401, 429])
            #expect(last?.header("Retry-After") != nil)
            #expect(last?.body.contains("role=\"alert\"") == true)
            #expect(last?.body.contains("Wait ") == true)
        }
    }

    @Test("wrong client secrets and device user codes are limited too")
    func guessLimits() async throws {
        try await withAuthFixture(configure: { $0.auth.attemptsPerAccount = 2 }) { fixture in
            let id = fixture.confidentialClient.id
            var statuses: [Int] = []
            for _ in 0..<3 {
                statuses.append(
                    try await fixture.token(["grant_type": "client_credentials", "client_id": id, "client_secret": "guess"])
                        .status)
            }
            #expect(statuses == [401, 401, 429])
            let right = try await fixture.token([
                "grant_type": "client_credentials", "client_id": id, "client_secret": fixture.confidentialSecret,
            ])
            #expect(right.status == 429)
            #expect(right.header("Retry-After") != nil)

            var codes: [Int] = []
            for guess in ["BCDF-GHJK", "BCDF-GHJL", "BCDF-GHJM"] {
                var fields = try await fixture.browser.get(fixture.base + "/device").hiddenFields
                fields["user_code"] = guess
                fields["username"] = "ada"
                fields["password"] = AuthFixture.password
                codes.append(try await fixture.browser.postForm(fixture.base + "/device", fields).status)
            }
            #expect(codes == [400, 400, 429])
        }
    }

    @Test("failure counts live in storage: a second server on the same database sees them")
    func limitsShared() async throws {
        try await withAuthFixture(configure: { $0.auth.attemptsPerAccount = 2 }) { fixture in
            for _ in 0..<2 {
                _ = try await fixture.token([
                    "grant_type": "password", "username": "ada", "password": "guess", "client_id": fixture.publicClient.id,
                ])
            }
            var configuration = ServerConfiguration(
                host: "127.0.0.1", port: 0, databasePath: fixture.server.folder.appendingPathComponent("test.sqlite").path,
                logger: .init(label: "second", factory: { _ in SwiftLogNoOpLogHandler() }))
            configuration.auth.attemptsPerAccount = 2
            configuration.auth.passwordCost = 4
            fixture.server.shareDatabase(with: &configuration)
            let second = try await OutpostServer(configuration: configuration).start()
            let page = try await fixture.browser.postForm(
                second.baseURL.absoluteString + "/oauth/token",
                [
                    "grant_type": "password", "username": "ada", "password": AuthFixture.password,
                    "client_id": fixture.publicClient.id,
                ])
            await second.stop()
            #expect(page.status == 429)
        }
    }

    // MARK: Bearer tokens and scopes

    @Test("a bearer token in the query string is refused")
    func tokenInQuery() async throws {
        try await withAuthFixture { fixture in
            let access = try #require(try await fixture.passwordTokens()["access_token"] as? String)
            let page = try await fixture.browser.get(fixture.base + "/me?access_token=\(access)")
            #expect(page.status == 400)
            #expect((page.json["error"] as? [String: Any])?["code"] as? String == "invalid_request")
            let records = try await fixture.browser.get(fixture.base + "/records/pets?access_token=\(access)")
            #expect(records.status == 400)
        }
    }

    @Test("scopes are enforced: 403 insufficient_scope with WWW-Authenticate; the old records scope means both")
    func scopes() async throws {
        try await withAuthFixture { fixture in
            let reader = try await fixture.passwordToken(scope: "records:read")
            #expect(try await fixture.bearer("/records/pets", token: reader).status == 200)
            let write = try await fixture.browser.postForm(
                fixture.base + "/records/pets", [:], authorization: "Bearer \(reader)")
            #expect(write.status == 403)
            #expect((write.json["error"] as? [String: Any])?["code"] as? String == "insufficient_scope")
            #expect(write.header("WWW-Authenticate") == "Bearer error=\"insufficient_scope\", scope=\"records:write\"")
            let me = try await fixture.bearer("/me", token: reader)
            #expect(me.status == 403)
            #expect(me.header("WWW-Authenticate")?.contains("scope=\"profile\"") == true)

            let profile = try await fixture.passwordToken(scope: "profile")
            #expect(try await fixture.bearer("/me", token: profile).status == 200)
            #expect(try await fixture.bearer("/records/pets", token: profile).status == 403)

            let legacy = try await fixture.passwordToken(scope: "records")
            let signed = OutpostClient(
                configuration: .init(baseURL: fixture.server.baseURL, defaultHeaders: [.authorization: "Bearer \(legacy)"]))
            let created = try await signed.send(.post("/records/pets", json: ["name": "rex"])).json()
            let path = "/records/pets/\(created["id"]?.stringValue ?? "")"
            #expect(try await signed.send(.get(path)).status == 200)
            #expect(try await signed.send(.delete(path)).status == 204)
            try await signed.shutdown()
            let asked = try await fixture.token([
                "grant_type": "password", "username": "ada", "password": AuthFixture.password,
                "client_id": fixture.publicClient.id, "scope": "admin",
            ])
            #expect(asked.json["error"] as? String == "invalid_scope")
        }
    }

    // MARK: Client registration

    @Test("redirect URIs: https, loopback http and private-use schemes only")
    func redirectURIs() async throws {
        try await withAuthFixture { fixture in
            try await fixture.withStorage { storage in
                for good in [
                    "https://app.example/cb", "http://127.0.0.1/cb", "http://127.0.0.1:8123/cb", "http://[::1]:9/cb",
                    "http://localhost:3000/cb", "com.example.app:/oauth2redirect", "myapp://oauth",
                ] {
                    _ = try await storage.registerClient(
                        name: "ok", redirectURIs: [good], grants: ["authorization_code"], scopes: [], confidential: false)
                }
                for bad in [
                    "javascript:alert(1)", "data:text/html,hi", "file:///etc/passwd", "http://app.example/cb",
                    "http://192.168.1.5/cb", "https://app.example/cb#frag", "not a uri",
                ] {
                    let error = try await #require(throws: ServerError.self, "\(bad)") {
                        _ = try await storage.registerClient(
                            name: "bad", redirectURIs: [bad], grants: ["authorization_code"], scopes: [], confidential: false)
                    }
                    #expect(error.code == "invalid_redirect_uri")
                }
            }
        }
    }

    // MARK: Headers

    @Test("pages send no Referer and cannot be framed; token answers are never cached")
    func headers() async throws {
        try await withAuthFixture { fixture in
            let page = try await fixture.browser.get(fixture.authorizeURL(PKCE()))
            #expect(page.header("Referrer-Policy") == "same-origin")
            #expect(page.header("X-Frame-Options") == "DENY")
            #expect(page.header("Content-Security-Policy")?.contains("frame-ancestors 'none'") == true)
            let device = try await fixture.browser.get(fixture.base + "/device")
            #expect(device.header("Referrer-Policy") == "same-origin")

            let success = try await fixture.token([
                "grant_type": "password", "username": "ada", "password": AuthFixture.password,
                "client_id": fixture.publicClient.id,
            ])
            let failure = try await fixture.token(["grant_type": "nonsense", "client_id": fixture.publicClient.id])
            let unknownClient = try await fixture.token(["grant_type": "password", "client_id": "nobody"])
            for answer in [success, failure, unknownClient] {
                #expect(answer.header("Cache-Control") == "no-store")
                #expect(answer.header("Pragma") == "no-cache")
            }
            #expect(success.status == 200)
            #expect(failure.status == 400)
        }
    }

    // MARK: The pages as a person sees them

    @Test("the consent page: scopes in words, where the browser returns, who is signed in with a way out")
    func consentPage() async throws {
        try await withAuthFixture { fixture in
            let url = fixture.authorizeURL(PKCE(), extra: "&scope=records:read+profile&state=s")
            let first = try await fixture.browser.get(url)
            #expect(first.body.contains("<title>Sign in to continue to Test CLI · Outpost</title>"))
            #expect(first.body.contains("See your records"))
            #expect(first.body.contains("See your username and entitlements"))
            #expect(first.body.contains("<strong id=\"redirect-host\">127.0.0.1:53682</strong>"))
            #expect(first.body.contains("autocomplete=\"current-password\""))
            #expect(first.body.contains("<button type=\"submit\" id=\"deny\" name=\"decision\" value=\"deny\" formnovalidate>"))
            #expect(!first.body.contains("<script"))
            _ = try await fixture.allow(url)

            let again = try await fixture.browser.get(url)
            #expect(again.body.contains("<title>Allow Test CLI? · Outpost</title>"))
            #expect(again.body.contains("Signed in as <strong>ada</strong> — not you?"))
            let link = try #require(
                again.body.range(of: #"id="sign-out" href="([^"]*)""#, options: .regularExpression).map {
                    String(again.body[$0]).replacingOccurrences(of: "id=\"sign-out\" href=\"", with: "").dropLast()
                })
            let signOut = try await fixture.browser.get(fixture.base + TestBrowser.Page.unescape(String(link)))
            #expect(signOut.status == 302)
            let back = try #require(signOut.header("Location"))
            #expect(back.hasPrefix("/oauth/authorize?"))
            let form = try await fixture.browser.get(fixture.base + back)
            #expect(form.body.contains("<label for=\"username\">Username</label>"), "signed out, the form asks again")
        }
    }

    @Test("deny works with empty username and password fields")
    func denyWithEmptyFields() async throws {
        try await withAuthFixture { fixture in
            var fields = try await fixture.browser.get(fixture.authorizeURL(PKCE())).hiddenFields
            fields["username"] = ""
            fields["password"] = ""
            fields["decision"] = "deny"
            let denied = try await fixture.browser.postForm(fixture.base + "/oauth/authorize", fields)
            #expect(denied.status == 303)
            #expect(AuthFixture.query(denied.header("Location") ?? "")["error"] == "access_denied")
        }
    }
}
