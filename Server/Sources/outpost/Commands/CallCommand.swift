import ArgumentParser
import Foundation
import Outpost

struct CallCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "call",
        abstract: "Call a lambda and print its result as pretty JSON.",
        discussion: """
            Arguments are JSON when they parse as JSON (42, true, {"a":1}), strings otherwise.
              outpost call hello:someone world
              outpost call hello:someone --named name=world
            """)

    @Argument(help: "The lambda's name, e.g. hello:someone.")
    var name: String

    @Argument(help: "Positional arguments.")
    var arguments: [String] = []

    @Option(name: .customLong("named"), help: "A named argument as key=value (repeatable).")
    var named: [String] = []

    @OptionGroup var options: SignInOptions

    @Option(help: "Seconds to wait for the reply.")
    var timeout = 10

    func validate() throws {
        if !arguments.isEmpty && !named.isEmpty {
            throw ValidationError("Use positional arguments or --named ones, not both")
        }
        for pair in named where !pair.contains("=") || pair.hasPrefix("=") {
            throw ValidationError("--named takes key=value, got '\(pair)'")
        }
    }

    func run() async throws {
        let client = try await options.signedClient(timeout: .seconds(timeout))
        let lambdaArguments: LambdaArguments
        if named.isEmpty {
            lambdaArguments = .positional(arguments.map(CLIValue.parse))
        } else {
            var object: [String: JSONValue] = [:]
            for pair in named {
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                object[String(parts[0])] = CLIValue.parse(String(parts[1]))
            }
            lambdaArguments = .named(object)
        }
        do {
            let result = try await client.callLambda(name, arguments: lambdaArguments)
            try await client.shutdown()
            print(result.jsonString(pretty: true))
        } catch {
            try? await client.shutdown()
            FileHandle.standardError.write(Data("error: \(error)\n".utf8))
            throw ExitCode.failure
        }
    }
}

/// Command-line values: JSON when they parse as JSON, strings otherwise.
enum CLIValue {
    static func parse(_ text: String) -> JSONValue {
        (try? JSONValue(parsing: Data(text.utf8))) ?? .string(text)
    }
}
