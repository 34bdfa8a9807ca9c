import ArgumentParser
import Foundation
import Logging
import OutpostServer

/// `outpost users delete USERNAME [--transfer-to USERNAME] [--yes]`.
struct UserDeleteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Delete a user, their tokens, sessions and records and files (or give those to another user).",
        discussion: """
            What DELETE /me does, from the database: every token of the user stops working at once, their records are
            deleted (synced clients see them deleted in the change feed) or, with --transfer-to, become the other
            user's. Asks for confirmation on a terminal unless --yes. Account deletion hooks that a server configures in
            code do not run here.
              outpost users delete ada
              outpost users delete ada --transfer-to archive --yes
            """)

    @Argument var username: String
    @Option(name: .customLong("transfer-to"), help: "Give the user's records and files to this user instead of deleting them.")
    var transferTo: String?
    @Flag(help: "Do not ask for confirmation.") var yes = false
    @Option(
        name: .customLong("files-directory"),
        help: "The server's --files-directory, when it sets one. Default: as `outpost serve` does.")
    var filesDirectory: String?
    @OptionGroup var options: DatabaseOptions

    func run() async throws {
        if !yes {
            guard isatty(STDIN_FILENO) == 1 else {
                throw ValidationError("Deleting '\(username)' cannot be undone; add --yes to confirm it without a terminal")
            }
            let what = transferTo.map { "their records and files go to '\($0)'" } ?? "their records and files are deleted"
            FileHandle.standardError.write(Data("Delete '\(username)'? \(what). Type the username to confirm: ".utf8))
            guard readLine(strippingNewline: true) == username else {
                throw ValidationError("Not confirmed; nothing was deleted")
            }
        }
        var logger = Logger(label: "outpost.admin")
        logger.logLevel = .warning
        var configuration = ServerConfiguration(databasePath: options.database, logger: logger)
        configuration.filesDirectory = filesDirectory
        let server = try OutpostServer(configuration: configuration)
        let (removal, files) = try await options.withStorage { storage in
            guard let user = try await storage.user(username: username) else {
                throw ValidationError("No user '\(username)'; `outpost users` lists none by that name")
            }
            if let transferTo, try await storage.user(username: transferTo) == nil {
                throw ValidationError("No user '\(transferTo)' to transfer to; add one with `outpost users add`")
            }
            let deleter = AccountDeleter(
                storage: storage, files: try await server.openFileStorage(storage: storage),
                configuration: configuration.accountDeletion, logger: logger)
            guard let deleted = try await deleter.delete(userID: user.id, recipient: transferTo) else {
                throw ValidationError("'\(username)' was deleted meanwhile")
            }
            await OperatorAudit.record(storage, deleted.removal, files: deleted.files)
            return deleted
        }
        let fate = removal.recipient == nil ? "deleted" : "transferred to \(transferTo ?? "")"
        print(
            "Deleted \(removal.username) (\(removal.userID)): \(removal.records) records and \(files) files \(fate), "
                + "\(removal.tokens) tokens revoked")
    }
}
