import ArgumentParser
import Foundation
import Outpost

/// `outpost accounts add|list|use|remove`: several signed-in accounts, one of them active.
struct AccountsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "accounts",
        abstract: "Keep several signed-in accounts (on one server or several) and switch between them.",
        subcommands: [Add.self, List.self, Use.self, Remove.self])

    /// Where the accounts list and their credentials live.
    struct Files: ParsableArguments {
        @Option(name: .customLong("accounts"), help: "The accounts file (default: $XDG_CONFIG_HOME/outpost/accounts.json).")
        var accountsPath: String?

        @Option(
            name: .customLong("credentials"), help: "The credentials file (default: $XDG_CONFIG_HOME/outpost/credentials.json).")
        var credentialsPath: String?

        var folder: AccountFolder { AccountFolder(accountsPath: accountsPath, credentialsPath: credentialsPath) }

        func withManager<T: Sendable>(_ body: (AccountManager) async throws -> T) async throws -> T {
            try await folder.withManager(body)
        }
    }

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Sign in with a username and password (read from the terminal) and add the account.",
            discussion: "Uses the client outpost-cli-password, which the server's operator must allow (see outpost login --help)."
        )
        @Option(help: "The server's base URL.") var server = "http://127.0.0.1:8080"
        @Option(help: "The username.") var username: String
        @OptionGroup var files: Files

        func run() async throws {
            guard let base = URL(string: server), base.host != nil else {
                throw ValidationError("--server must be a URL like http://127.0.0.1:8080")
            }
            let password = try LoginCommand.prompt("Password for \(username): ", echo: false)
            let account = try await files.withManager { manager in
                try await manager.add(server: base, name: username) {
                    try await $0.signIn(username: username, password: password)
                }
            }
            print("Added \(account.id).")
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the accounts; the active one is marked with *.")
        @OptionGroup var files: Files

        func run() async throws {
            let (accounts, active) = try await files.withManager { manager in
                (try await manager.accounts(), try await manager.activeAccount()?.id)
            }
            if accounts.isEmpty { print("No accounts; add one with: outpost accounts add --username NAME --server URL") }
            for account in accounts {
                print("\(account.id == active ? "*" : " ") \(account.id)\t\(account.server.absoluteString)")
            }
        }
    }

    struct Use: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Make an account the active one.")
        @Argument(help: "The account's id, as `accounts list` shows it.") var id: String
        @OptionGroup var files: Files

        func run() async throws {
            try await files.withManager { try await $0.use(id) }
            print("Active: \(id).")
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Sign one account out (its tokens revoked, its credential deleted) and remove it; the others stay.")
        @Argument(help: "The account's id, as `accounts list` shows it.") var id: String
        @Flag(help: "Do not revoke the tokens at the server (e.g. it is gone).") var noRevoke = false
        @OptionGroup var files: Files

        func run() async throws {
            try await files.withManager { try await $0.remove(id, revoke: !noRevoke) }
            print("Removed \(id).")
        }
    }
}
