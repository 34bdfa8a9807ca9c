import ArgumentParser

@main
struct OutpostCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "outpost",
        abstract: "The Outpost reference server, a tour of the SDK, and tools to call a backend.",
        subcommands: [
            ServeCommand.self, DemoCommand.self, CallCommand.self, RecordsCommand.self, ClientsCommand.self, UsersCommand.self,
            RulesCommand.self, TypesCommand.self,
            KeysCommand.self, ProvidersCommand.self,
            LoginCommand.self, LogoutCommand.self, WhoamiCommand.self,
            CallbacksCommand.self,
            OutboxCommand.self,
            AccountsCommand.self,
            FilesCommand.self,
            SyncCommand.self,
            BackupCommand.self, RestoreCommand.self, AuditCommand.self,
        ]
    )
}
