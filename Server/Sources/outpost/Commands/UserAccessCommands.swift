import ArgumentParser
import Foundation
import OutpostServer

/// `outpost users disable|enable|sign-out USERNAME`: whether a user may sign in, and ending what
/// they are signed in with.
enum UserAccessCommands {
    /// The user `username` and the storage's user administration, or a clear error.
    static func user(_ username: String, in storage: any Storage) async throws -> (StoredUser, any UserAdminStorage) {
        guard let admin = storage as? any UserAdminStorage else {
            throw ValidationError("This database cannot disable users or sign them out; use SQLite or PostgreSQL")
        }
        guard let user = try await storage.user(username: username) else {
            throw ValidationError("No user '\(username)'; add one with `outpost users add`")
        }
        return (user, admin)
    }

    struct Disable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Stop a user from signing in, and sign them out everywhere.",
            discussion: """
                In one transaction: every token of the user is revoked (their apps get 401 at once), their browser sessions
                end and their pending codes stop working. No sign-in works for them until `outpost users enable`.
                  outpost users disable ada
                """)
        @Argument var username: String
        @OptionGroup var options: DatabaseOptions

        func run() async throws {
            try await options.withStorage { storage in
                let (user, admin) = try await UserAccessCommands.user(username, in: storage)
                guard try await admin.disableUser(id: user.id, now: Int64(Date().timeIntervalSince1970 * 1000)) else {
                    throw ValidationError("'\(username)' was deleted meanwhile")
                }
                await OperatorAudit.record(storage, AuditAction.userDisabled, subject: user.id)
                print("\(user.username) is disabled and signed out everywhere")
            }
        }
    }

    struct Enable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Let a disabled user sign in again (nothing that disabling revoked comes back).",
            discussion: "  outpost users enable ada")
        @Argument var username: String
        @OptionGroup var options: DatabaseOptions

        func run() async throws {
            try await options.withStorage { storage in
                let (user, admin) = try await UserAccessCommands.user(username, in: storage)
                guard try await admin.enableUser(id: user.id) else {
                    throw ValidationError("'\(username)' was deleted meanwhile")
                }
                await OperatorAudit.record(storage, AuditAction.userEnabled, subject: user.id)
                print("\(user.username) may sign in again")
            }
        }
    }

    struct SignOut: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "sign-out",
            abstract: "Sign a user out everywhere: revoke their tokens, end their browser sessions and pending codes.",
            discussion: """
                They may sign in again at once; `outpost users disable` also stops that.
                  outpost users sign-out ada
                """)
        @Argument var username: String
        @OptionGroup var options: DatabaseOptions

        func run() async throws {
            try await options.withStorage { storage in
                let (user, admin) = try await UserAccessCommands.user(username, in: storage)
                guard try await admin.signOutEverywhere(userID: user.id) else {
                    throw ValidationError("'\(username)' was deleted meanwhile")
                }
                await OperatorAudit.record(storage, AuditAction.userSignedOut, subject: user.id)
                print("\(user.username) is signed out everywhere")
            }
        }
    }
}
