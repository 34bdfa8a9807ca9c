import Foundation
import Outpost
import OutpostTestSupport
import Testing

/// `outpost sync` end to end: the built binary against a live server, with a store in a folder.
@Suite("outpost sync", .closesWhatItOpens, .timeLimit(.minutes(3)))
struct SyncCommandIntegrationTests {
    /// Runs the `outpost` binary with `arguments` and a configuration folder of its own; answers its
    /// exit status and standard output.
    static func outpost(_ binary: URL, _ arguments: [String], home: URL) async throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        process.environment = ["HOME": home.path, "XDG_CONFIG_HOME": home.path, "PATH": "/usr/bin:/bin"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        let exit = ProcessExit(watching: process)
        try process.run()
        var text = ""
        for await chunk in output.fileHandleForReading.chunksOffPool() { text += String(decoding: chunk, as: UTF8.self) }
        return (await exit.wait().status, text)
    }

    static func lines(_ output: String) throws -> [JSONValue] {
        try output.split(separator: "\n").map { try JSONValue(parsing: Data($0.utf8)) }
    }

    @Test(
        "pull, query, create, patch, delete, status and push through the CLI",
        .enabled(if: CrashRecoveryTests.binary != nil))
    func roundTrip() async throws {
        let binary = try #require(CrashRecoveryTests.binary)
        try await withLiveServer { server, client in
            let home = FileManager.default.temporaryDirectory.appending(path: "outpost-sync-cli-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: home) }
            let store = home.appending(path: "store").path
            let remote = ["--store", store, "--server", server.baseURL.absoluteString]
            for n in [1, 2] { _ = try await client.send(.post("/records/items", json: ["n": .int(n)])) }

            #expect(try await Self.outpost(binary, ["sync", "pull", "items"] + remote, home: home).status == 0)
            let pulled = try Self.lines(
                try await Self.outpost(binary, ["sync", "query", "items", "--sort", "n", "--store", store], home: home).output)
            #expect(pulled.map { $0["n"] } == [1, 2])
            #expect(pulled.allSatisfy { $0["_state"] == "confirmed" })

            let created = try await Self.outpost(binary, ["sync", "create", "items", #"{"n": 5}"#, "--store", store], home: home)
            let id = created.output.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(created.status == 0 && id.hasPrefix("local-"))
            let patched = try await Self.outpost(
                binary, ["sync", "patch", "items", id, #"{"n": 6}"#, "--store", store], home: home)
            #expect(try Self.lines(patched.output).first?["_state"] == "pending")
            let status = try await Self.outpost(binary, ["sync", "status", "--store", store], home: home)
            #expect(try Self.lines(status.output) == [["items": ["pending": 2, "failed": 0]]])

            let pushed = try await Self.outpost(binary, ["sync", "push"] + remote, home: home)
            #expect(pushed.status == 0)
            #expect(try Self.lines(pushed.output) == [[:]])
            let six = try Self.lines(
                try await Self.outpost(
                    binary, ["sync", "query", "items", "--filter", "record.n == 6", "--store", store], home: home
                )
                .output)
            #expect(six.count == 1 && six.first?["_state"] == "confirmed")
            #expect(six.first?["id"]?.stringValue?.hasPrefix("local-") == false)
            let list = try await client.send(.get("/records/items", query: [URLQueryItem(name: "limit", value: "100")])).json()
            #expect(list["results"]?.arrayValue?.compactMap { $0["n"] } == [1, 2, 6])

            let first = try #require(pulled.first?["id"]?.stringValue)
            let deleted = try await Self.outpost(binary, ["sync", "delete", "items", first, "--store", store], home: home)
            #expect(deleted.status == 0)
            let remaining = try await Self.outpost(
                binary, ["sync", "query", "items", "--sort", "n", "--store", store], home: home)
            #expect(try Self.lines(remaining.output).map { $0["n"] } == [2, 6])
            #expect(try await Self.outpost(binary, ["sync", "push"] + remote, home: home).status == 0)
            let afterDelete = try await client.send(.get("/records/items")).json()
            #expect(afterDelete["results"]?.arrayValue?.compactMap { $0["n"] } == [2, 6])

            let refused = try await Self.outpost(
                binary, ["sync", "query", "items", "--filter", "record.n >", "--store", store], home: home)
            #expect(refused.status != 0)
        }
    }
}
