import ArgumentParser
import Foundation
import OutpostServer

struct ProvidersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "providers",
        abstract: "Add, list and remove upstream OpenID Connect providers apps sign in with (works on the database directly).",
        subcommands: [Add.self, List.self, Remove.self])

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Trust an OpenID Connect provider's ID tokens for sign-in (token exchange at /oauth/token).",
            discussion: """
                The server fetches the issuer's /.well-known/openid-configuration and key set when a token first arrives.
                Clients that may exchange ID tokens need the token_exchange grant (outpost clients add ... --grant token_exchange).
                  outpost providers add google --issuer https://accounts.google.com --client-id 1234-abc.apps.googleusercontent.com
                  outpost providers add apple --apple --client-id com.example.app \\
                      --apple-team-id TEAMID1234 --apple-key-id KEYID12345 --apple-private-key AuthKey_KEYID12345.p8
                """)
        @Argument(help: "The name apps send as provider, e.g. google or apple.") var name: String
        @Option(help: "The issuer; tokens' iss must be exactly this. Default with --apple: https://appleid.apple.com.")
        var issuer: String?
        @Option(name: .customLong("client-id"), help: "A client id the provider issued to the app (repeatable).")
        var clientIDs: [String] = []
        @Option(help: "The client secret the provider gave, if any; stored in the database, never shown.")
        var clientSecret: String?
        @Flag(help: "Sign in with Apple: its tokens carry the SHA-256 (hex) of the nonce.") var apple = false
        @Option(help: "Sign in with Apple: the team id that signs the client secret.") var appleTeamID: String?
        @Option(help: "Sign in with Apple: the id of the key.") var appleKeyID: String?
        @Option(help: "Sign in with Apple: the .p8 key file; its contents are stored in the database.")
        var applePrivateKey: String?
        @OptionGroup var options: DatabaseOptions

        func run() async throws {
            let isApple = apple || appleTeamID != nil || appleKeyID != nil || applePrivateKey != nil
            guard let issuer = issuer ?? (isApple ? UpstreamProvider.appleIssuer : nil) else {
                throw ValidationError("Give --issuer: the provider's issuer URL")
            }
            var pem: String?
            if let applePrivateKey {
                do {
                    pem = try String(contentsOf: URL(fileURLWithPath: applePrivateKey), encoding: .utf8)
                } catch {
                    throw ValidationError("Cannot read the Apple private key file \(applePrivateKey)")
                }
            }
            let provider = try await UpstreamProvider(
                name: name, issuer: issuer, kind: isApple ? .apple : .openID, clientIDs: clientIDs,
                clientSecret: clientSecret, appleTeamID: appleTeamID, appleKeyID: appleKeyID, applePrivateKeyPEM: pem,
                createdAt: Int64(Date().timeIntervalSince1970 * 1000)
            ).validated()
            let added = try await options.withStorage { storage in
                let added = try await ProvidersCommand.storage(storage).addUpstreamProvider(provider)
                if added {
                    await OperatorAudit.record(
                        storage, AuditAction.providerAdded, subject: name,
                        detail: ["issuer": issuer, "kind": provider.kind.rawValue])
                }
                return added
            }
            guard added else {
                throw ValidationError("A provider named \(name) or with issuer \(issuer) is already registered; remove it first")
            }
            print("Added provider \(name) (issuer \(issuer)).")
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the upstream providers (secrets are not shown).")
        @OptionGroup var options: DatabaseOptions

        func run() async throws {
            let providers = try await options.withStorage { try await ProvidersCommand.storage($0).upstreamProviders() }
            if providers.isEmpty { print("No upstream providers; add one with `outpost providers add`.") }
            for provider in providers {
                var line = "\(provider.name)  \(provider.kind.rawValue)  \(provider.issuer)  client ids: "
                line += provider.clientIDs.joined(separator: ", ")
                if provider.hasClientSecret { line += "  (client secret stored)" }
                if let team = provider.appleTeamID, let key = provider.appleKeyID { line += "  (Apple team \(team), key \(key))" }
                print(line)
            }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Stop accepting a provider's tokens; users it signed in keep their accounts and links.")
        @Argument var name: String
        @OptionGroup var options: DatabaseOptions

        func run() async throws {
            let removed = try await options.withStorage { storage in
                let removed = try await ProvidersCommand.storage(storage).removeUpstreamProvider(name: name)
                if removed { await OperatorAudit.record(storage, AuditAction.providerRemoved, subject: name) }
                return removed
            }
            guard removed else { throw ValidationError("No provider named \(name)") }
            print("Removed provider \(name).")
        }
    }

    static func storage(_ storage: any Storage) throws -> any UpstreamProviderStorage {
        guard let providers = storage as? any UpstreamProviderStorage else {
            throw ValidationError("This storage does not keep upstream providers")
        }
        return providers
    }
}
