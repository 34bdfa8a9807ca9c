import ArgumentParser
import Foundation
import Outpost

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where the CLI keeps credentials, and how it builds an authenticator for a server.
struct SignInOptions: ParsableArguments {
    @Option(
        name: .customLong("server"),
        help: "The server's base URL (default: the active account's server, else http://127.0.0.1:8080).")
    var serverOption: String?

    @Option(
        name: .customLong("account"),
        help: "Sign requests as this account of `outpost accounts` (its id, as `accounts list` shows it).")
    var accountID: String?

    @Option(name: .customLong("accounts"), help: "The accounts file (default: beside the credentials file).")
    var accountsPath: String?

    /// `--server`, or the default local server.
    var server: String { serverOption ?? "http://127.0.0.1:8080" }

    @Option(
        name: .customLong("client-id"),
        help: "The OAuth client the CLI signs in as (default: outpost-cli; with login --password: outpost-cli-password).")
    var clientID: String?

    @Option(name: .customLong("credentials"), help: "The credentials file (default: $XDG_CONFIG_HOME/outpost/credentials.json).")
    var credentialsPath: String?

    var baseURL: URL {
        get throws {
            guard let url = URL(string: server), url.host != nil else {
                throw ValidationError("--server must be a URL like http://127.0.0.1:8080")
            }
            return url
        }
    }

    var store: FileCredentialStore {
        FileCredentialStore(
            fileURL: credentialsPath.map { URL(fileURLWithPath: $0) }
                ?? FileCredentialStore.defaultLocation(application: "outpost"))
    }

    /// The built-in client of the browser and device sign-ins.
    static let defaultClientID = "outpost-cli"
    /// The client `login --password` uses. The password grant is legacy (RFC 9700 §2.4: the app sees
    /// the password, and it cannot do multi-factor or single sign-on), so servers do not offer it
    /// unless an operator registers a client that opts in:
    /// `outpost clients add "Outpost CLI (password)" --id outpost-cli-password --grant password --grant refresh_token`.
    static let passwordClientID = "outpost-cli-password"
    /// What the CLI asks for: its records commands read and write, `whoami` reads the profile.
    static let scopes = ["records:read", "records:write", "profile"]

    /// One credential per server and client in the shared file.
    func account(for clientID: String) -> String { "\(server)#\(clientID)" }

    /// `--client-id`, else the built-in client that holds a stored credential for this server.
    func storedClientID() async -> String {
        if let clientID { return clientID }
        for candidate in [Self.defaultClientID, Self.passwordClientID]
        where (try? await store.load(account: account(for: candidate))) != nil {
            return candidate
        }
        return Self.defaultClientID
    }

    /// - Parameter openID: Ask for `openid` too (an ID token the SDK verifies).
    func authenticator(
        client: OutpostClient, clientID: String, browser: any BrowserOpening = SystemBrowser(), openID: Bool = false
    ) throws
        -> Authenticator
    {
        let base = try baseURL
        return Authenticator(
            configuration: .init(
                registration: ClientRegistration(
                    clientID: clientID, redirectURI: URL(string: "http://127.0.0.1/callback"),
                    scopes: Self.scopes + (openID ? [Authenticator.openIDScope] : [])),
                endpoints: .outpost(base: base), store: store, account: account(for: clientID), browser: browser),
            client: client)
    }

    /// A client that signs its requests with the stored credential, when there is one.
    func signedClient(timeout: Duration = .seconds(10)) async throws -> OutpostClient {
        try await signing(timeout: timeout).client
    }

    /// A client and the account of `outpost accounts` it signs as, if any. In order: `--account`;
    /// the active account, when it is for `--server` (or `--server` is not given); the credential
    /// of `outpost login` for the server; none (the requests go out unsigned).
    func signing(timeout: Duration = .seconds(10)) async throws -> (client: OutpostClient, account: Account?) {
        let explicitServer = try serverOption.map { _ in try baseURL }
        let folder = AccountFolder(accountsPath: accountsPath, credentialsPath: credentialsPath)
        if let account = try await folder.account(id: accountID, server: explicitServer) {
            let plain = OutpostClient(configuration: .init(baseURL: account.server, timeout: timeout))
            let auth: Authenticator
            do {
                auth = try await folder.manager(transport: plain.transport).authenticator(for: account.id)
            } catch {
                try? await plain.shutdown()
                throw error
            }
            let client = OutpostClient(
                configuration: plain.configuration, ownedTransport: plain.transport,
                middlewares: [AuthMiddleware(authenticator: auth)])
            return (client, account)
        }
        let plain = OutpostClient(configuration: .init(baseURL: try baseURL, timeout: timeout))
        let auth = try authenticator(client: plain, clientID: await storedClientID())
        guard (try? await auth.credential()) != nil else { return (plain, nil) }
        let client = OutpostClient(
            configuration: plain.configuration, ownedTransport: plain.transport,
            middlewares: [AuthMiddleware(authenticator: auth)])
        return (client, nil)
    }
}

/// Shows the sign-in address (so it works without a desktop too) and tries to open it.
struct CLIBrowser: BrowserOpening {
    func open(_ url: URL) async throws {
        FileHandle.standardOutput.write(Data("Open this page to sign in (trying your browser): \(url.absoluteString)\n".utf8))
        try? await SystemBrowser().open(url)
    }
}

struct LoginCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "login",
        abstract: "Sign in to an Outpost server and keep the credential for later commands.",
        discussion: """
            --browser (the default) opens the sign-in page and listens on 127.0.0.1 for the answer.
            --device shows a code to enter on another device. Both use the built-in client outpost-cli.
            --password asks here and uses the client outpost-cli-password. The password grant is legacy
            (RFC 9700 §2.4: this program sees your password; no multi-factor, no single sign-on), so a
            server offers it only after its operator opts in:
              outpost clients add "Outpost CLI (password)" --id outpost-cli-password --grant password --grant refresh_token
            The credential is stored owner-only in $XDG_CONFIG_HOME/outpost/credentials.json.
            """)

    @Flag(help: "Sign in on another device with a short code.") var device = false
    @Flag(help: "Sign in through the browser (the default).") var browser = false
    @Flag(help: "Sign in with a username and password typed here (legacy; the server must allow it).") var password = false
    @Option(help: "The username, with --password.") var username: String?
    @Flag(help: "Sign in with OpenID Connect too (browser): the server's ID token is verified and kept.") var openid = false
    @OptionGroup var options: SignInOptions

    func validate() throws {
        if [device, browser, password].filter({ $0 }).count > 1 {
            throw ValidationError("Choose one of --device, --browser and --password")
        }
        if openid && (device || password) {
            throw ValidationError("--openid works with the browser sign-in only")
        }
    }

    func run() async throws {
        let client = OutpostClient(configuration: .init(baseURL: try options.baseURL))
        let clientID = options.clientID ?? (password ? SignInOptions.passwordClientID : SignInOptions.defaultClientID)
        let auth = try options.authenticator(client: client, clientID: clientID, browser: CLIBrowser(), openID: openid)
        do {
            if device {
                _ = try await auth.signInWithDeviceCode { code in
                    // Unbuffered: the code must show at once, also when the output is piped.
                    var text = "To sign in, open \(code.verificationURI.absoluteString) and enter the code \(code.userCode)\n"
                    if let complete = code.verificationURIComplete { text += "(or open \(complete.absoluteString))\n" }
                    FileHandle.standardOutput.write(Data((text + "Waiting…\n").utf8))
                }
            } else if password {
                let name = try username ?? Self.prompt("Username: ", echo: true)
                let secret = try Self.prompt("Password: ", echo: false)
                _ = try await auth.signIn(username: name, password: secret)
            } else {
                _ = try await auth.signInWithBrowser()
            }
        } catch {
            try? await client.shutdown()
            var text = "error: \(error)\n"
            if password && options.clientID == nil {
                text +=
                    "(The password grant is off unless the server's operator allows it: outpost clients add \"Outpost CLI (password)\" "
                    + "--id \(SignInOptions.passwordClientID) --grant password --grant refresh_token. Or use --browser or --device.)\n"
            }
            FileHandle.standardError.write(Data(text.utf8))
            throw ExitCode.failure
        }
        try? await client.shutdown()
        // One credential per server: forget the other built-in client's, so later commands use this one.
        for other in [SignInOptions.defaultClientID, SignInOptions.passwordClientID] where other != clientID {
            try? await options.store.remove(account: options.account(for: other))
        }
        let signed = OutpostClient(
            configuration: .init(baseURL: try options.baseURL), middlewares: [AuthMiddleware(authenticator: auth)])
        let me = try? await signed.send(.get("/me"), decoding: JSONValue.self)
        try? await signed.shutdown()
        print("Signed in as \(me?["username"]?.stringValue ?? "?") at \(options.server).")
    }

    /// Reads a line from the terminal; with `echo: false` the typing is not shown.
    static func prompt(_ label: String, echo: Bool) throws -> String {
        FileHandle.standardError.write(Data(label.utf8))
        var original = termios()
        let isTerminal = isatty(STDIN_FILENO) == 1
        if !echo && isTerminal {
            tcgetattr(STDIN_FILENO, &original)
            var silent = original
            silent.c_lflag &= ~tcflag_t(ECHO)
            tcsetattr(STDIN_FILENO, TCSANOW, &silent)
        }
        defer {
            if !echo && isTerminal {
                tcsetattr(STDIN_FILENO, TCSANOW, &original)
                FileHandle.standardError.write(Data("\n".utf8))
            }
        }
        guard let line = readLine(strippingNewline: true), !line.isEmpty else {
            throw ValidationError("Nothing was entered")
        }
        return line
    }
}

struct LogoutCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "logout", abstract: "Forget the stored credential and revoke it at the server.")
    @OptionGroup var options: SignInOptions

    func run() async throws {
        let client = OutpostClient(configuration: .init(baseURL: try options.baseURL))
        let auth = try options.authenticator(client: client, clientID: await options.storedClientID())
        guard (try? await auth.credential()) != nil else {
            try? await client.shutdown()
            print("Not signed in at \(options.server).")
            return
        }
        do {
            try await auth.signOut(revoke: true)
            print("Signed out of \(options.server).")
        } catch let error as AuthError where error.code == .revocationFailed {
            print("Signed out locally; the server could not be told (\(error)).")
        }
        try? await client.shutdown()
    }
}

struct WhoamiCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "whoami", abstract: "Show who the stored credential signs in as.")
    @OptionGroup var options: SignInOptions

    func run() async throws {
        let (client, account) = try await options.signing()
        let me: JSONValue
        do {
            me = try await client.send(.get("/me"), decoding: JSONValue.self)
            try? await client.shutdown()
        } catch let error as OutpostError where error.code == .unauthorized {
            try? await client.shutdown()
            print("Not signed in at \(client.configuration.baseURL.absoluteString). Run `outpost login`.")
            throw ExitCode.failure
        } catch {
            try? await client.shutdown()
            FileHandle.standardError.write(Data("error: \(error)\n".utf8))
            throw ExitCode.failure
        }
        let entitlements = me["entitlements"]?.arrayValue?.compactMap(\.stringValue) ?? []
        print(
            "\(me["username"]?.stringValue ?? "(a client without a user)") at \(client.configuration.baseURL.absoluteString)"
                + (account.map { " (account \($0.id))" } ?? "")
                + (entitlements.isEmpty ? "" : "; entitlements: \(entitlements.joined(separator: ", "))"))
        guard account == nil else { return }
        let plain = OutpostClient(configuration: .init(baseURL: try options.baseURL))
        let auth = try? options.authenticator(client: plain, clientID: await options.storedClientID())
        if let credential = try? await auth?.credential(), let claims = credential.idToken?.claims {
            print(
                "ID token (verified at sign-in): sub \(claims.subject), iss \(claims.issuer), "
                    + "signed in \(claims.authTime.map { "\($0)" } ?? "?"), expires \(claims.expiresAt)")
        }
        try? await plain.shutdown()
    }
}
