import ArgumentParser
import Foundation
import Logging
import OutpostServer

/// Options for commands that work on the server's database directly (administration).
struct DatabaseOptions: ParsableArguments {
    @Option(help: "The server's database: a SQLite file, or a postgres://user:password@host:port/database URL.")
    var database = "outpost.sqlite"

    func withStorage<T>(_ body: (any Storage) async throws -> T) async throws -> T {
        var logger = Logger(label: "outpost.admin")
        logger.logLevel = .warning
        let storage = try await DatabaseLocation(database).openMigrated(logger: logger)
        do {
            let result = try await body(storage)
            try await storage.close()
            return result
        } catch {
            try? await storage.close()
            throw error
        }
    }
}

struct ClientsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clients", abstract: "Register, list and remove OAuth clients (works on the database directly).",
        subcommands: [Add.self, List.self, Rotate.self, Remove.self])

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Register a client; prints its id (and, for --confidential, its secret, shown once).",
            discussion: """
                Grants: \(OAuthClient.allGrants.joined(separator: ", ")).
                Scopes: records:read, records:write, profile (records, the old scope, means both records scopes).
                Redirect URIs: https, http on a loopback address, or an app's own scheme (com.example.app:/cb).
                A loopback redirect URI registered without a port (http://127.0.0.1/callback) matches any port (RFC 8252).
                The password grant is legacy (RFC 9700 §2.4) and only for clients that opt in with --grant password,
                e.g. the client `outpost login --password` uses:
                  outpost clients add "Outpost CLI (password)" --id outpost-cli-password --grant password --grant refresh_token
                  outpost clients add "My CLI" --redirect-uri http://127.0.0.1/callback --grant authorization_code --grant refresh_token --grant device_code
                """)

        @Argument(help: "A name people recognise on the consent page.") var name: String
        @Option(name: .customLong("redirect-uri"), help: "An exact redirect URI (repeatable).") var redirectURIs: [String] = []
        @Option(name: .customLong("grant"), help: "A grant the client may use (repeatable).") var grants: [String] = [
            "authorization_code", "refresh_token",
        ]
        @Option(name: .customLong("scope"), help: "A scope the client may ask for (repeatable).") var scopes: [String] = [
            "records:read", "records:write", "profile", "openid",
        ]
        @Flag(help: "A confidential client (a server that can keep a secret).") var confidential = false
        @Option(help: "Choose the client id instead of generating one.") var id: String?
        @OptionGroup var options: DatabaseOptions

        func run() async throws {
            try await options.withStorage { storage in
                let (client, secret) = try await storage.registerClient(
                    name: name, redirectURIs: redirectURIs, grants: grants, scopes: scopes, confidential: confidential, id: id)
                await AuditLog(storage: storage, logger: OperatorAudit.logger).record(
                    AuditEvent.clientAdded(client, actor: AuditEvent.operatorActor))
                print("client_id: \(client.id)")
                if grants.contains("password") {
                    print("note: the password grant is legacy (RFC 9700 §2.4); prefer authorization_code or device_code")
                }
                if let secret { print("client_secret: \(secret)   (shown once; store it safely)") }
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List registered clients.")
        @OptionGroup var options: DatabaseOptions

        func run() async throws {
            try await options.withStorage { storage in
                for client in try await storage.clients() {
                    print("\(client.id)  \(client.name)  \(client.isConfidential ? "confidential" : "public")")
                    print("    grants: \(client.grants.joined(separator: " "))  scopes: \(client.scopes.joined(separator: " "))")
                    for uri in client.redirectURIs { print("    redirect: \(uri)") }
                }
            }
        }
    }

    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Give a confidential client a new secret (shown once); the old one is refused at once.",
            discussion: """
                The client's tokens stay valid unless --revoke-tokens is given: use it after a leak.
                  outpost clients rotate my-service --revoke-tokens
                """)
        @Argument var id: String
        @Flag(name: .customLong("revoke-tokens"), help: "Also revoke every token issued to the client.")
        var revokeTokens = false
        @OptionGroup var options: DatabaseOptions

        func run() async throws {
            let secret = try await options.withStorage { storage in
                guard let client = try await storage.client(id: id) else {
                    throw ValidationError("No client '\(id)'; `outpost clients list` shows them")
                }
                guard client.isConfidential else {
                    throw ValidationError("'\(id)' is a public client: it has no secret to rotate")
                }
                guard let secret = try await storage.rotateClientSecret(id: id, revokeTokens: revokeTokens) else {
                    throw ValidationError("No client '\(id)'; `outpost clients list` shows them")
                }
                await OperatorAudit.record(
                    storage, AuditAction.clientSecretRotated, subject: id,
                    detail: ["tokens_revoked": revokeTokens ? "true" : "false"])
                return secret
            }
            print("client_secret: \(secret)   (shown once; store it safely)")
            if revokeTokens { print("every token issued to \(id) is revoked") }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove a client and revoke its tokens.")
        @Argument var id: String
        @OptionGroup var options: DatabaseOptions

        func run() async throws {
            let removed = try await options.withStorage { storage in
                let removed = try await storage.removeClient(id: id)
                if removed { await OperatorAudit.record(storage, AuditAction.clientRemoved, subject: id) }
                return removed
            }
            guard removed else {
                FileHandle.standardError.write(Data("error: no client '\(id)'; `outpost clients list` shows them\n".utf8))
                throw ExitCode.failure
            }
            print("removed \(id); its tokens are revoked")
        }
    }
}

struct UsersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "users",
        abstract:
            "Add users, invite them, set their entitlements, roles and quotas, disable them, sign them out, delete them (works on the database directly).",
        subcommands: [
            Add.self, Invite.self, Entitle.self, RolesCommand.self, QuotaCommand.self, UserAccessCommands.Disable.self,
            UserAccessCommands.Enable.self, UserAccessCommands.SignOut.self, UserDeleteCommand.self,
        ])

    struct Invite: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print a one-time invite code for sign-up on a server run with --signup invite.",
            discussion: """
                The code is shown once; the database keeps only its hash, so every instance on it accepts the code, once.
                The new user sends it in POST /users as {"username": ..., "password": ..., "invite": "inv_..."}.
                  outpost users invite --expires 3d
                """)
        @Option(help: "How long the code stays valid: a number with s, m, h or d (at most 90d). Default: 7d.")
        var expires = "7d"
        @OptionGroup var options: DatabaseOptions

        func validate() throws {
            guard Self.lifetime(expires) != nil else {
                throw ValidationError("--expires takes a number with s, m, h or d, from 1s to 90d, e.g. 12h or 7d")
            }
        }

        /// `90s`, `30m`, `12h` or `7d` as a duration of at most 90 days.
        static func lifetime(_ text: String) -> Duration? {
            guard text.utf8.count <= 12, let unit = text.last, let count = Int64(text.dropLast()), count > 0 else { return nil }
            let seconds: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86400]
            guard let scale = seconds[unit], count <= 90 * 86400 / scale else { return nil }
            return .seconds(count * scale)
        }

        func run() async throws {
            let lifetime = Self.lifetime(expires) ?? .seconds(7 * 86400)
            let (code, expiry) = try await options.withStorage { storage in
                let issued = try await Invites.issue(in: storage, lifetime: lifetime)
                await OperatorAudit.record(
                    storage, AuditAction.inviteIssued, subject: nil,
                    detail: ["expires": ISO8601DateFormatter().string(from: issued.1)])
                return issued
            }
            print(code)
            FileHandle.standardError.write(
                Data("valid once, until \(ISO8601DateFormatter().string(from: expiry)); the database keeps only its hash\n".utf8))
        }
    }

    struct Entitle: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Set a user's entitlements (shown in GET /me, used by compliance checks).",
            discussion:
                "  outpost users entitle ada premium sports   # ada now has exactly: premium, sports\n  outpost users entitle ada                  # none"
        )
        @Argument var username: String
        @Argument(help: "The entitlements the user has from now on.") var entitlements: [String] = []
        @OptionGroup var options: DatabaseOptions

        func run() async throws {
            try await options.withStorage { storage in
                guard let user = try await storage.user(username: username) else {
                    throw ValidationError("No user '\(username)'; add one with `outpost users add`")
                }
                try await storage.setEntitlements(entitlements, userID: user.id)
                await OperatorAudit.record(
                    storage, AuditAction.userEntitlementsChanged, subject: user.id,
                    detail: ["entitlements": entitlements.joined(separator: " ")])
                print("\(user.username): \(entitlements.isEmpty ? "no entitlements" : entitlements.joined(separator: ", "))")
            }
        }
    }

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Add a user; the password is read from standard input.")
        @Argument var username: String
        @Option(help: "The user's e-mail address (password-reset mail goes only to a verified one).") var email: String?
        @Flag(name: .customLong("email-verified"), help: "Mark --email verified: you know it is theirs.")
        var emailVerified = false
        @OptionGroup var options: DatabaseOptions

        func validate() throws {
            if let email, (try? MailAddress(email)) == nil {
                throw ValidationError("--email \(email) is not an address local@domain (ASCII, no spaces or quotes)")
            }
            if emailVerified && email == nil { throw ValidationError("--email-verified needs --email") }
        }

        func run() async throws {
            let input = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
            let password = input.trimmingCharacters(in: .newlines)
            guard password.count >= 8 else { throw ValidationError("Pipe a password of at least 8 characters on standard input") }
            let user = try await options.withStorage { storage in
                let user = try await storage.addUser(username: username, password: password)
                if let email {
                    guard let mail = storage as? any MailStorage else {
                        throw ValidationError("This database keeps no e-mail addresses")
                    }
                    _ = try await mail.setEmail(try MailAddress(email).address, verified: emailVerified, userID: user.id)
                }
                await OperatorAudit.record(storage, AuditAction.userAdded, subject: user.id, detail: ["username": user.username])
                return user
            }
            print("added \(user.username) (\(user.id))")
        }
    }
}
