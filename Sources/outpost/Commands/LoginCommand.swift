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
    @Option(help: "The server's base URL.")
    var server = "http://127.0.0.1:8080"

    @Option(name: .customLong("client-id"), help: "The OAuth client the CLI signs in as.")
    var clientID = "outpost-cli"

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

    /// One credential per server and client in the shared file.
    var account: String { "\(server)#\(clientID)" }

    func authenticator(client: OutpostClient, browser: any BrowserOpening = SystemBrowser()) throws -> Authenticator {
        let base = try baseURL
        return Authenticator(
            configuration: .init(
                registration: ClientRegistration(
                    clientID: clientID, redirectURI: URL(string: "http://127.0.0.1/callback"), scopes: ["records", "profile"]),
                endpoints: .outpost(base: base), store: store, account: account, browser: browser),
            client: client)
    }

    /// A client that signs its requests with the stored credential, when there is one.
    func signedClient(timeout: Duration = .seconds(10)) async throws -> OutpostClient {
        let base = try baseURL
        let plain = OutpostClient(configuration: .init(baseURL: base, timeout: timeout))
        let auth = try authenticator(client: plain)
        guard (try? await auth.credential()) != nil else { return plain }
        return OutpostClient(
            configuration: plain.configuration, ownedTransport: plain.transport,
            middlewares: [AuthMiddleware(authenticator: auth)])
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
            --device shows a code to enter on another device. --password asks here.
            The credential is stored owner-only in $XDG_CONFIG_HOME/outpost/credentials.json.
            """)

    @Flag(help: "Sign in on another device with a short code.") var device = false
    @Flag(help: "Sign in through the browser (the default).") var browser = false
    @Flag(help: "Sign in with a username and password typed here.") var password = false
    @Option(help: "The username, with --password.") var username: String?
    @OptionGroup var options: SignInOptions

    func validate() throws {
        if [device, browser, password].filter({ $0 }).count > 1 {
            throw ValidationError("Choose one of --device, --browser and --password")
        }
    }

    func run() async throws {
        let client = OutpostClient(configuration: .init(baseURL: try options.baseURL))
        let auth = try options.authenticator(client: client, browser: CLIBrowser())
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
            FileHandle.standardError.write(Data("error: \(error)\n".utf8))
            throw ExitCode.failure
        }
        try? await client.shutdown()
        let signed = try await options.signedClient()
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
        let auth = try options.authenticator(client: client)
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
        let client = try await options.signedClient()
        do {
            let me = try await client.send(.get("/me"), decoding: JSONValue.self)
            try? await client.shutdown()
            let entitlements = me["entitlements"]?.arrayValue?.compactMap(\.stringValue) ?? []
            print(
                "\(me["username"]?.stringValue ?? "(a client without a user)") at \(options.server)"
                    + (entitlements.isEmpty ? "" : "; entitlements: \(entitlements.joined(separator: ", "))"))
        } catch let error as OutpostError where error.code == .unauthorized {
            try? await client.shutdown()
            print("Not signed in at \(options.server). Run `outpost login`.")
            throw ExitCode.failure
        }
    }
}
