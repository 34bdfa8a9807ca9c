import ArgumentParser
import Foundation
import OutpostServer

struct KeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys", abstract: "List and rotate the keys that sign ID tokens (works on the database directly).",
        subcommands: [List.self, Rotate.self])

    static func time(_ milliseconds: Int64) -> String {
        ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the signing keys: the one in use, and retired ones (published until their grace period ends).")
        @OptionGroup var options: DatabaseOptions

        func run() async throws {
            try await options.withStorage { storage in
                let keys = try await storage.signingKeys()
                if keys.isEmpty { print("No signing key yet: the server makes one when it first needs it.") }
                for key in keys {
                    let state = key.retiredAt.map { "retired \(KeysCommand.time($0))" } ?? "in use"
                    print("\(key.kid)  \(key.algorithm)  created \(KeysCommand.time(key.createdAt))  \(state)")
                }
            }
        }
    }

    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make a new signing key; running servers sign with it at once.",
            discussion: """
                The previous key stays in the JWKS for the grace period, so ID tokens signed just before still verify.
                Keys retired longer ago than the grace period are deleted.
                  outpost keys rotate --database outpost.sqlite
                """)
        @Option(help: "Hours a replaced key stays published; match the server's setting.") var graceHours = 24
        @OptionGroup var options: DatabaseOptions

        func validate() throws {
            guard graceHours >= 0 else { throw ValidationError("--grace-hours cannot be negative") }
        }

        func run() async throws {
            let (key, removed) = try await options.withStorage { storage in
                try await SigningKeyRotation.rotate(
                    in: storage, gracePeriod: .seconds(graceHours * 3600), actor: AuditEvent.operatorActor,
                    logger: OperatorAudit.logger)
            }
            print("New signing key \(key.kid) is in use.")
            if removed > 0 { print("Deleted \(removed) key(s) retired more than \(graceHours) h ago.") }
        }
    }
}
