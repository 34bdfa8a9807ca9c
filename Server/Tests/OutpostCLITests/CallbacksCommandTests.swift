import ArgumentParser
import Testing

@testable import outpost

@Suite("outpost callbacks build")
struct CallbacksCommandTests {
    @Test(
        "--error takes a negative code such as -1",
        arguments: [
            ["x-error://done", "--error", "-1", "Bad thing"],
            ["x-error://done", "--error", "--", "-1", "Bad thing"],
            ["--error", "x-error://done", "-1", "Bad thing"],
        ])
    func negativeCode(_ arguments: [String]) throws {
        let command = try CallbacksCommand.Build.parse(arguments)
        #expect(command.error)
        #expect(command.values == ["-1", "Bad thing"])
    }

    @Test("a message starting with a dash is a value too")
    func dashedMessage() throws {
        let command = try CallbacksCommand.Build.parse(["x-error://done", "--error", "-1", "-bad-"])
        #expect(command.values == ["-1", "-bad-"])
    }

    @Test("--success with NAME=VALUE pairs still parses, and a wrong count still fails validation")
    func others() throws {
        let success = try CallbacksCommand.Build.parse(["x-success://ok", "--success", "a=1", "b=-2"])
        #expect(success.success)
        #expect(success.values == ["a=1", "b=-2"])
        #expect(throws: (any Error).self) { try CallbacksCommand.Build.parse(["x-error://done", "--error", "-1"]) }
    }
}
