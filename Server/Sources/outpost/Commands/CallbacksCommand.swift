import ArgumentParser
import Foundation
import OutpostCallbacks

/// `outpost callbacks`: the x-callback-url conformance surface.
struct CallbacksCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "callbacks",
        abstract: "Parse x-callback-urls and build callback URLs.",
        subcommands: [Parse.self, Build.self]
    )
}

extension CallbacksCommand {
    /// `outpost callbacks parse URL --register SCHEME:ACTION ...`
    struct Parse: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Route an x-callback-url and print what was parsed as JSON.",
            discussion: """
                Prints {"action", "source", "x-success", "x-error", "x-cancel", "parameters"} and \
                exits 0; on a routing error prints {"error": KIND, ...} with what could be parsed \
                and exits 1. KIND is unknownScheme, invalidHost, missingAction or unknownAction.
                """
        )

        @Argument(help: "The URL to route.")
        var url: String

        @Option(
            name: .customLong("register"),
            help: ArgumentHelp("An action to register, e.g. myapp:open. Repeat for more.", valueName: "scheme:action"))
        var registrations: [String] = []

        func validate() throws {
            for registration in registrations {
                guard let colon = registration.firstIndex(of: ":"),
                    colon != registration.startIndex,
                    registration.index(after: colon) != registration.endIndex
                else {
                    throw ValidationError("--register takes SCHEME:ACTION, e.g. myapp:open (got '\(registration)').")
                }
            }
        }

        func run() async throws {
            // A recording opener: parsing never opens anything.
            let router = CallbackRouter(opener: RecordingURLOpener())
            for registration in registrations {
                guard let colon = registration.firstIndex(of: ":") else { continue }
                let scheme = String(registration[..<colon])
                let action = String(registration[registration.index(after: colon)...])
                router.register(scheme: scheme, action: action) { _ in }
            }
            do {
                let callback = try router.route(url)
                print(callback.conformanceJSON)
            } catch {
                print(error.conformanceJSON)
                throw ExitCode(1)
            }
        }
    }

    /// `outpost callbacks build BASE_URL (--success [NAME=VALUE ...] | --error CODE MESSAGE | --cancel)`
    struct Build: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the callback URL that answering would open.",
            usage: """
                outpost callbacks build <base-url> --success [<name=value> ...]
                outpost callbacks build <base-url> --error <code> <message>
                outpost callbacks build <base-url> --cancel
                """,
            discussion: """
                Prints nothing when <base-url> is the empty string. Values may start with a dash, \
                e.g. --error -1 "Bad thing"; a -- before them is allowed and skipped.
                """
        )

        @Argument(help: "The x-success, x-error or x-cancel URL to answer through.")
        var baseURL: String

        /// Everything that is not a flag, dashes included, so that `--error -1 "Bad thing"` works:
        /// `-1` is an error code, not an option.
        @Argument(
            parsing: .allUnrecognized,
            help: ArgumentHelp("NAME=VALUE pairs for --success; CODE MESSAGE for --error.", valueName: "value"))
        var rawValues: [String] = []

        /// The values, without the one `--` that may precede them.
        var values: [String] {
            guard let terminator = rawValues.firstIndex(of: "--") else { return rawValues }
            var values = rawValues
            values.remove(at: terminator)
            return values
        }

        @Flag(help: "Answer success, with the NAME=VALUE values as parameters.")
        var success = false

        @Flag(help: "Answer failure with the two values CODE and MESSAGE.")
        var error = false

        @Flag(help: "Answer cancellation.")
        var cancel = false

        func validate() throws {
            let modes = [("--success", success), ("--error", error), ("--cancel", cancel)].filter(\.1).map(\.0)
            guard modes.count == 1 else {
                if modes.isEmpty {
                    throw ValidationError("Choose one answer: --success [NAME=VALUE ...], --error CODE MESSAGE or --cancel.")
                }
                throw ValidationError("\(modes.joined(separator: " and ")) cannot be combined: choose one answer.")
            }
            if error, values.count != 2 {
                throw ValidationError("--error takes exactly two values, CODE and MESSAGE (got \(values.count)).")
            }
            if cancel, !values.isEmpty {
                throw ValidationError("--cancel takes no values (got \(values.joined(separator: " "))).")
            }
            if success {
                for value in values where (value.firstIndex(of: "=") ?? value.startIndex) == value.startIndex {
                    throw ValidationError("--success takes NAME=VALUE pairs with a non-empty NAME (got '\(value)').")
                }
            }
        }

        func run() async throws {
            let answer: CallbackAnswer
            if error {
                answer = .error(code: values[0], message: values[1])
            } else if cancel {
                answer = .cancel
            } else {
                answer = .success(
                    parameters: values.map { pair in
                        let equals = pair.firstIndex(of: "=") ?? pair.endIndex
                        let value = equals == pair.endIndex ? "" : String(pair[pair.index(after: equals)...])
                        return (name: String(pair[..<equals]), value: value)
                    })
            }
            if let url = answer.url(base: baseURL) {
                print(url)
            }
        }
    }
}
