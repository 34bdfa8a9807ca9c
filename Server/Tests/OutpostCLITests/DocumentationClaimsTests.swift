import ArgumentParser
import Foundation
import Testing

@testable import outpost

/// Keeps the documentation true to the code: every `outpost` command line in README.md and docs/*.md
/// names subcommands and options the CLI has; the paths, modules and types README.md and
/// ARCHITECTURE.md put in code font exist, and so do the suites `swift test --filter` commands name;
/// the module tables list the packages' products, targets and every top-level subcommand.
@Suite("documentation claims")
struct DocumentationClaimsTests {
    @Test("every outpost command line in README.md and docs/*.md uses subcommands and options the CLI has")
    func commandLines() throws {
        let cli = try CLICommand.outpost()
        var count = 0
        for document in try Document.readmeAndDocs() {
            for command in document.outpostCommands() {
                count += 1
                for problem in cli.problems(with: command.words) {
                    Issue.record("\(document.name):\(command.line): `\(command.text)`: \(problem)")
                }
            }
        }
        #expect(count >= 50, "only \(count) outpost command lines found: the extraction is broken")
    }

    @Test("the checks catch a misspelt option or subcommand, a stray argument, a value read as an option and a missing name")
    func checksCatchMistakes() throws {
        let cli = try CLICommand.outpost()
        func problems(_ line: String) -> [String] {
            Shell.commands(in: line).filter { $0.first?.text == "outpost" }.flatMap { cli.problems(with: $0) }
        }
        #expect(problems("outpost serve --databse X") == ["`outpost serve` has no option --databse"])
        #expect(problems("outpost records lst people") == ["`outpost records` has no subcommand `lst`"])
        #expect(problems("outpost clients add|lst") == ["`outpost clients` has no subcommand `lst`"])
        #expect(problems("outpost whoami me") == ["`outpost whoami` takes no arguments, but the line gives it `me`"])
        #expect(
            problems("outpost records list people --sort -created") == [
                "--sort would read `-created` as an option, not as its value: write --sort=-created"
            ])
        // What documentation writes around and inside commands passes.
        #expect(problems("printf 'pw\\n' | outpost users add ada > out.txt 2>&1   # a comment") == [])
        #expect(problems("outpost callbacks build BASE_URL --success NAME=VALUE… | --error -1 MESSAGE | --cancel") == [])
        #expect(problems("outpost types drop-index TYPE FIELD... [--database URL]") == [])
        #expect(problems("outpost users|clients|keys") == [])
        #expect(problems("outpost rules COMMAND") == [])
        #expect(
            Shell.commands(in: "A=\"$(date)\" outpost call x 'a b' && echo done") == [
                [
                    Word(text: "A=$(…)", quoted: true), Word(text: "outpost"), Word(text: "call"), Word(text: "x"),
                    Word(text: "a b", quoted: true),
                ],
                [Word(text: "echo"), Word(text: "done")],
            ])

        let tree = try SourceTree()
        func problem(_ name: String, after: String = "") -> String? {
            tree.problem(with: CodeSpan(text: name, line: 1, after: after))
        }
        #expect(problem("Sources/OutpostCore/NoSuchFolder/") == "no such file or folder in the repository")
        #expect(problem("NoSuchFolder/") == "no such file or folder in the repository")
        #expect(problem("OutpostNoSuchType") == "no type `OutpostNoSuchType` is declared, and no module has that name")
        #expect(problem("ServerConfiguration.noSuchField") == "no declaration of `noSuchField` in the Swift sources")
        #expect(
            problem("NoSuchArticle", after: " DocC article in OutpostCore.") == "no DocC catalog has an article NoSuchArticle.md")
        for name in ["ServerConfiguration.maxBodyBytes", "Server/Sources/outpost/Demo/*Tour.swift", "Files/", "index_required"] {
            #expect(problem(name) == nil, "\(name)")
        }
    }

    @Test("the paths, modules and types that README.md and ARCHITECTURE.md put in code font exist")
    func namesInCodeFont() throws {
        let tree = try SourceTree()
        var count = 0
        for document in try [Document("README.md"), Document("ARCHITECTURE.md")] {
            for span in document.codeSpans {
                count += 1
                if let problem = tree.problem(with: span) {
                    Issue.record("\(document.name):\(span.line): `\(span.text)`: \(problem)")
                }
            }
        }
        #expect(count >= 300, "only \(count) code spans found: the extraction is broken")
        for name in SourceTree.outsideNames.sorted() where !tree.identifiers.contains(name) {
            Issue.record("`\(name)` is on the list of outside names, but no source uses it: take it off the list")
        }
    }

    @Test(
        "the suites and targets that `swift test --filter` commands in README.md, ARCHITECTURE.md, CONTRIBUTING.md and docs/*.md name exist"
    )
    func testFilters() throws {
        let tree = try SourceTree()
        var count = 0
        for document in try Document.readmeAndDocs() + [Document("ARCHITECTURE.md"), Document("CONTRIBUTING.md")] {
            for command in document.commands() where command.words.starts(with: [Word(text: "swift"), Word(text: "test")]) {
                for (index, word) in command.words.enumerated() where word.text.hasPrefix("--filter") {
                    let next = index + 1 < command.words.count ? command.words[index + 1].text : ""
                    let value = word.text.hasPrefix("--filter=") ? String(word.text.dropFirst(9)) : next
                    guard !value.allSatisfy({ $0.isUppercase || $0 == "_" }) else { continue }  // a placeholder: NAME
                    // `--filter` takes a regular expression: each alternative names a suite or target.
                    for name in value.split(separator: "|").map(String.init) {
                        count += 1
                        let known = tree.types.contains(name) || tree.moduleFolders.contains { $0.hasSuffix("/" + name) }
                        if !known {
                            Issue.record(
                                "\(document.name):\(command.line): `\(command.text)`: no test suite or test target is named \(name)"
                            )
                        }
                    }
                }
            }
        }
        #expect(count >= 1, "no `swift test --filter` command found: the extraction is broken")
    }

    @Test("README.md's module table lists the library products and the server and CLI of Server/Package.swift")
    func readmeModuleTable() throws {
        let readme = try Document("README.md")
        let rows = readme.table(headedBy: "| module | what it does |")
        #expect(!rows.isEmpty, "README.md has no `| module | what it does |` table")
        let listed = Dictionary(rows.compactMap { row in row.cells.first?.firstCodeSpan.map { ($0, row.line) } }) { a, _ in a }

        let root = try String(contentsOf: Document.root.appendingPathComponent("Package.swift"), encoding: .utf8)
        let server = try String(contentsOf: Document.root.appendingPathComponent("Server/Package.swift"), encoding: .utf8)
        // `_OutpostSupport` is the server package's door to the client modules' SPI, not a module an
        // app uses; the benchmark has its own section ("Benchmarks").
        let unlisted: Set = ["_OutpostSupport", "outpost-bench"]
        var expected: [String: String] = [:]
        for name in Manifest.products("library", in: root) { expected[name] = "Package.swift" }
        for name in Manifest.products("library", in: server) + Manifest.products("executable", in: server) {
            expected[name] = "Server/Package.swift"
        }
        expected = expected.filter { !unlisted.contains($0.key) }
        #expect(expected.count >= 10, "only \(expected.count) products found in the manifests: the parsing is broken")

        let tableLine = rows.first?.line ?? 0
        for (name, manifest) in expected.sorted(by: { $0.key < $1.key }) where listed[name] == nil {
            Issue.record("README.md:\(tableLine): the module table does not list `\(name)`, a product of \(manifest)")
        }
        for (name, line) in listed.sorted(by: { $0.key < $1.key }) where expected[name] == nil {
            Issue.record("README.md:\(line): the module table lists `\(name)`, which neither manifest declares as a product")
        }
    }

    @Test("ARCHITECTURE.md's module table has a row for every target of both packages but the tests")
    func architectureModuleTable() throws {
        let architecture = try Document("ARCHITECTURE.md")
        let rows = architecture.table(headedBy: "| module | owns | imports |")
        #expect(!rows.isEmpty, "ARCHITECTURE.md has no `| module | owns | imports |` table")
        let listed = Dictionary(rows.compactMap { row in row.cells.first?.firstCodeSpan.map { ($0, row.line) } }) { a, _ in a }
        // Examples/GeneratedClient's sources, linked into Server/Sources so that CI's check of the
        // generated client builds with the server package: an example's code, not a module of ours.
        let notModules: Set = ["generated-client-check"]
        let targets = try ["Sources", "Server/Sources"].flatMap { folder in
            try FileManager.default.contentsOfDirectory(atPath: Document.root.appendingPathComponent(folder).path)
                .filter { !$0.hasPrefix(".") && !notModules.contains($0) }
        }
        #expect(targets.count >= 12, "only \(targets.count) targets found in Sources/ and Server/Sources/")
        let tableLine = rows.first?.line ?? 0
        for target in Set(targets).sorted() where listed[target] == nil {
            Issue.record("ARCHITECTURE.md:\(tableLine): the module table has no row for `\(target)`")
        }
        for (name, line) in listed.sorted(by: { $0.key < $1.key }) where !targets.contains(name) {
            Issue.record("ARCHITECTURE.md:\(line): the module table has a row for `\(name)`, which is not a target")
        }
    }

    @Test(
        "the outpost rows of the module tables list every top-level subcommand",
        arguments: [
            ("README.md", "| module | what it does |"), ("ARCHITECTURE.md", "| module | owns | imports |"),
        ])
    func subcommandsInModuleTable(file: String, header: String) throws {
        let document = try Document(file)
        let row = document.table(headedBy: header).first { $0.cells.first?.firstCodeSpan == "outpost" }
        guard let row, row.cells.count > 1 else {
            Issue.record("\(file): the table headed `\(header)` has no `outpost` row")
            return
        }
        // Only the spans that look like subcommands: the row also names folders and types.
        let listed = row.cells[1].codeSpans.filter { span in
            !span.isEmpty && span.allSatisfy { $0.isLowercase || $0 == "-" }
        }
        let subcommands = try CLICommand.outpost().subcommands.map(\.commandName).filter { $0 != "help" }
        for name in subcommands where !listed.contains(name) {
            Issue.record("\(file):\(row.line): the `outpost` row does not list the subcommand `\(name)`")
        }
        for name in listed where !subcommands.contains(name) {
            Issue.record("\(file):\(row.line): the `outpost` row lists `\(name)`, which is not a subcommand of outpost")
        }
    }
}

// MARK: - Markdown

/// A Markdown file of the repository, split into fenced code and prose.
private struct Document {
    /// The repository's root: this file is `Server/Tests/OutpostCLITests/DocumentationClaimsTests.swift`.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// The path from the root, as messages name it.
    let name: String
    /// The lines inside fenced code blocks, with their 1-based numbers.
    let fencedLines: [(line: Int, text: String)]
    /// Every line, with the lines of fenced blocks (fences included) left empty.
    let prose: [String]

    init(_ name: String) throws {
        self.name = name
        let text = try String(contentsOf: Self.root.appendingPathComponent(name), encoding: .utf8)
        var fencedLines: [(line: Int, text: String)] = []
        var prose: [String] = []
        var fence: String?
        for (index, line) in text.components(separatedBy: "\n").enumerated() {
            let trimmed = line.drop { $0 == " " }
            if let open = fence {
                if trimmed.hasPrefix(open) { fence = nil } else { fencedLines.append((index + 1, line)) }
                prose.append("")
            } else if trimmed.hasPrefix("```") || trimmed.hasPrefix("~~~") {
                fence = String(trimmed.prefix(3))
                prose.append("")
            } else {
                prose.append(line)
            }
        }
        self.fencedLines = fencedLines
        self.prose = prose
    }

    /// README.md and every Markdown file in docs/.
    static func readmeAndDocs() throws -> [Document] {
        let docs = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("docs").path)
            .filter { $0.hasSuffix(".md") }.sorted()
        return try [Document("README.md")] + docs.map { try Document("docs/\($0)") }
    }

    /// The inline code spans of the prose, as CommonMark reads them: a run of backticks up to the next
    /// run of as many, within one paragraph; a line break inside a span reads as a space.
    var codeSpans: [CodeSpan] {
        var spans: [CodeSpan] = []
        var paragraphStart = 0
        while paragraphStart < prose.count {
            var end = paragraphStart
            while end < prose.count, !prose[end].allSatisfy(\.isWhitespace) { end += 1 }
            if end > paragraphStart {
                spans += Self.codeSpans(
                    in: Array(prose[paragraphStart..<end].joined(separator: "\n")), firstLine: paragraphStart + 1)
            }
            paragraphStart = end + 1
        }
        return spans
    }

    private static func codeSpans(in characters: [Character], firstLine: Int) -> [CodeSpan] {
        func run(at index: Int) -> Int {
            var end = index
            while end < characters.count, characters[end] == "`" { end += 1 }
            return end - index
        }
        var spans: [CodeSpan] = []
        var index = 0
        while index < characters.count {
            guard characters[index] == "`" else {
                index += 1
                continue
            }
            let opening = run(at: index)
            var close = index + opening
            while close < characters.count, characters[close] != "`" || run(at: close) != opening {
                close += characters[close] == "`" ? run(at: close) : 1
            }
            guard close < characters.count else {
                index += opening
                continue
            }
            // In a table a `|` inside code is written `\|`.
            let text = String(characters[(index + opening)..<close]).replacingOccurrences(of: "\n", with: " ")
                .replacingOccurrences(of: "\\|", with: "|").trimmingCharacters(in: .whitespaces)
            let after = characters[(close + opening)...].prefix { $0 != "\n" }
            let line = firstLine + characters[..<index].filter { $0 == "\n" }.count
            spans.append(CodeSpan(text: text, line: line, after: String(after)))
            index = close + opening
        }
        return spans
    }

    /// The rows of the table whose header line starts with `header`.
    func table(headedBy header: String) -> [(line: Int, cells: [String])] {
        guard let start = prose.firstIndex(where: { $0.hasPrefix(header) }) else { return [] }
        var rows: [(line: Int, cells: [String])] = []
        var index = start + 2  // past the header and its `| --- |` line
        while index < prose.count, prose[index].hasPrefix("|") {
            let cells = prose[index].replacingOccurrences(of: "\\|", with: "\u{0}").split(separator: "|")
                .map { $0.replacingOccurrences(of: "\u{0}", with: "|").trimmingCharacters(in: .whitespaces) }
            rows.append((index + 1, cells))
            index += 1
        }
        return rows
    }

    /// Every shell command of the document: in fenced code (lines joined at a trailing `\\`, a leading
    /// `$ ` prompt dropped) and in inline code spans, without leading `NAME=value` assignments.
    func commands() -> [DocumentedCommand] {
        var sources: [(line: Int, text: String)] = []
        var continued: (line: Int, text: String)?
        for (line, raw) in fencedLines {
            var text = raw.trimmingCharacters(in: .whitespaces)
            if text.hasPrefix("$ ") { text.removeFirst(2) }
            let start = continued?.line ?? line
            if let continued { text = continued.text + " " + text }
            continued = nil
            if text.hasSuffix("\\") {
                continued = (start, String(text.dropLast()))
            } else {
                sources.append((start, text))
            }
        }
        if let continued { sources.append(continued) }
        sources += codeSpans.map { ($0.line, $0.text) }

        return sources.flatMap { line, text in
            Shell.commands(in: text).map { words in
                let assignments = words.prefix { word in
                    guard let equals = word.text.firstIndex(of: "="), equals != word.text.startIndex else { return false }
                    return word.text[..<equals].allSatisfy { $0.isUppercase || $0.isNumber || $0 == "_" }
                }
                return DocumentedCommand(line: line, words: Array(words.dropFirst(assignments.count)))
            }
        }
    }

    /// Every `outpost …` command of the document with at least one argument; a `swift run … outpost …`
    /// counts from its `outpost`.
    func outpostCommands() -> [DocumentedCommand] {
        commands().compactMap { command in
            let words = command.words
            if words.first?.text == "outpost", words.count > 1 { return command }
            guard words.count > 2, words[0].text == "swift", words[1].text == "run",
                let start = words.firstIndex(where: { $0.text == "outpost" }), start + 1 < words.count
            else { return nil }
            return DocumentedCommand(line: command.line, words: Array(words[start...]))
        }
    }
}

/// Text in backticks.
private struct CodeSpan {
    let text: String
    /// The 1-based line it starts on.
    let line: Int
    /// The rest of that line after the closing backticks.
    let after: String
}

extension String {
    /// The text of the first inline code span in this string.
    fileprivate var firstCodeSpan: String? { codeSpans.first }

    /// The texts of the inline code spans in this one-line string.
    fileprivate var codeSpans: [String] {
        split(separator: "`", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 1 }
            .map { String($0.element) }
    }
}

// MARK: - Command lines

/// A word of a command line as the shell passes it on.
private struct Word: Equatable {
    var text: String
    /// Whether any of it was in quotes (its brackets are then part of it).
    var quoted = false
}

/// An `outpost` command in a document.
private struct DocumentedCommand {
    let line: Int
    let words: [Word]

    /// The command without what the shell drops (comments, redirections), quoted words in quotes.
    var text: String { words.map { $0.quoted ? "'\($0.text)'" : $0.text }.joined(separator: " ") }
}

/// Just enough of the shell's grammar to find the words of the commands in a line of documentation.
private enum Shell {
    /// The commands of `text`, split at `|`, `||`, `&&`, `;` and `&`, without redirections (`> file`,
    /// `2>&1`), comments (`# …`) or command substitutions (`$(…)`, kept as one word `$(…)`).
    ///
    /// Documentation heuristics, on top of the shell:
    /// - `a|b` written without spaces is a choice (`outpost clients add|list|remove`), kept as one word.
    /// - A command after ` | ` that starts with an option continues the one before it, as in usage
    ///   lines (`--success NAME=VALUE… | --error CODE MESSAGE | --cancel`).
    /// - Brackets and parentheses around unquoted words are usage syntax (`[--expires 7d]`,
    ///   `(--success … | --cancel)`) and are dropped, and so are the words `...` and `…`.
    static func commands(in text: String) -> [[Word]] {
        let characters = Array(text)
        var commands: [[Word]] = [[]]
        var afterPipe: [Bool] = [false]
        var word = Word(text: "")
        var inWord = false
        var skipNextWord = false
        func endWord() {
            if inWord {
                if skipNextWord { skipNextWord = false } else { commands[commands.count - 1].append(word) }
            }
            word = Word(text: "")
            inWord = false
        }
        func endCommand(pipe: Bool) {
            endWord()
            commands.append([])
            afterPipe.append(pipe)
        }
        var index = 0
        func substitutionStarts() -> Bool {
            characters[index] == "$" && index + 1 < characters.count && characters[index + 1] == "("
        }
        /// Reads the `$(…)` at `index` into the word as `$(…)`.
        func readSubstitution() {
            var depth = 0
            index += 1
            repeat {
                if characters[index] == "(" { depth += 1 } else if characters[index] == ")" { depth -= 1 }
                index += 1
            } while index < characters.count && depth > 0
            word.text += "$(…)"
        }
        while index < characters.count {
            let character = characters[index]
            let next = index + 1 < characters.count ? characters[index + 1] : nil
            switch character {
            case " ", "\t", "\n":
                endWord()
                index += 1
            case "'", "\"":
                inWord = true
                word.quoted = true
                index += 1
                while index < characters.count, characters[index] != character {
                    if character == "\"", substitutionStarts() {
                        readSubstitution()
                        continue
                    }
                    if character == "\"", characters[index] == "\\", index + 1 < characters.count { index += 1 }
                    word.text.append(characters[index])
                    index += 1
                }
                index += 1
            case "\\":
                if let next, next != "\n" {
                    word.text.append(next)
                    inWord = true
                }
                index += 2
            case "#" where !inWord:
                while index < characters.count, characters[index] != "\n" { index += 1 }
            case "$" where substitutionStarts():
                readSubstitution()
                inWord = true
            case "|" where inWord && next != nil && next != " " && next != "|":
                word.text.append("|")
                index += 1
            case "|":
                endCommand(pipe: next != "|")
                index += next == "|" ? 2 : 1
            case "&", ";":
                endCommand(pipe: false)
                index += next == "&" ? 2 : 1
            case ">", "<":
                if inWord, !word.quoted, word.text.allSatisfy(\.isNumber) {
                    word = Word(text: "")
                    inWord = false
                } else {
                    endWord()
                }
                index += 1
                while index < characters.count, characters[index] == ">" || characters[index] == "&" { index += 1 }
                skipNextWord = true
            default:
                word.text.append(character)
                inWord = true
                index += 1
            }
        }
        endWord()

        var merged: [[Word]] = []
        for (words, pipe) in zip(commands, afterPipe) {
            if pipe, words.first?.text.hasPrefix("-") == true, !merged.isEmpty {
                merged[merged.count - 1] += words
            } else {
                merged.append(words)
            }
        }
        return merged.map { words in
            words.compactMap { word in
                guard !word.quoted else { return word }
                let text = word.text.trimmingCharacters(in: CharacterSet(charactersIn: "[]()"))
                return text.isEmpty || text == "..." || text == "…" ? nil : Word(text: text)
            }
        }.filter { !$0.isEmpty }
    }
}

/// The `outpost` command tree as ArgumentParser describes it (what `outpost --experimental-dump-help`
/// prints): names, aliases, subcommands and arguments, help flags included.
private struct CLICommand: Decodable {
    struct Argument: Decodable {
        struct Name: Decodable {
            var kind: String
            var name: String
            /// The name as a command line writes it.
            var spelled: String { (kind == "long" ? "--" : "-") + name }
        }
        /// `positional`, `option` (takes a value) or `flag`.
        var kind: String
        var names: [Name]?
        /// How an option finds its value, or what a positional argument collects (`allUnrecognized`).
        var parsingStrategy: String
    }

    var commandName: String
    var aliases: [String]?
    var defaultSubcommand: String?
    private var subcommandList: [CLICommand]?
    var arguments: [Argument]?

    enum CodingKeys: String, CodingKey {
        case commandName, aliases, defaultSubcommand, arguments
        case subcommandList = "subcommands"
    }

    var subcommands: [CLICommand] { subcommandList ?? [] }

    static func outpost() throws -> CLICommand {
        struct Dump: Decodable { var command: CLICommand }
        return try JSONDecoder().decode(Dump.self, from: Data(OutpostCommand._dumpHelp().utf8)).command
    }

    func argument(named name: String) -> Argument? {
        arguments?.first { argument in argument.names?.contains { $0.spelled == name } ?? false }
    }

    var takesPositionals: Bool { arguments?.contains { $0.kind == "positional" } ?? false }

    /// Whether unknown options end up as values (an argument parsed `.allUnrecognized`, like
    /// `callbacks build`'s, so that `--error -1 "Bad thing"` works).
    var collectsUnrecognized: Bool { arguments?.contains { $0.parsingStrategy == "allUnrecognized" } ?? false }

    /// What is wrong with `words` (`outpost` and what follows it) as a command line of this tool.
    ///
    /// Subcommands are matched by name and alias from the first word on, until a word is not one; every
    /// word that starts with `-` must then be an option or flag of the command reached (`--name=value`
    /// included), and an option takes the word after it as its value. Placeholders pass: any value
    /// does, and an all-capitals word where a subcommand goes (`outpost rules COMMAND`) ends the check.
    /// A word `a|b` where a subcommand goes is checked as each choice.
    func problems(with words: [Word]) -> [String] {
        var command = self
        var path = [commandName]
        var problems: [String] = []
        var takesSubcommand = true
        var index = 1
        func isOption(_ text: String) -> Bool { text.count > 1 && text.hasPrefix("-") }
        while index < words.count {
            let word = words[index]
            index += 1
            if word.text == "--" { break }  // values only from here
            if isOption(word.text) {
                let name = word.text.split(separator: "=", maxSplits: 1).first.map(String.init) ?? word.text
                guard let argument = command.argument(named: name) else {
                    let number = word.text.dropFirst().allSatisfy { $0.isNumber || $0 == "." }
                    if !(number && command.collectsUnrecognized) {
                        problems.append("`\(path.joined(separator: " "))` has no option \(name)")
                        // Read the word after it as its value, so that one typo makes one message.
                        if index < words.count, !word.text.contains("="), !isOption(words[index].text) { index += 1 }
                    }
                    continue
                }
                guard argument.kind == "option", !word.text.contains("=") else { continue }
                switch argument.parsingStrategy {
                case "upToNextOption":
                    while index < words.count, !isOption(words[index].text) { index += 1 }
                case "unconditional":
                    index += 1
                case "allRemainingInput", "postTerminator":
                    index = words.count
                default:
                    guard index < words.count else { break }
                    if !isOption(words[index].text) {
                        index += 1
                    } else if argument.parsingStrategy == "default" {
                        let value = words[index].text
                        problems.append("\(name) would read `\(value)` as an option, not as its value: write \(name)=\(value)")
                        index += 1
                    }
                }
                continue
            }
            if takesSubcommand, !command.subcommands.isEmpty {
                if let subcommand = command.subcommands.first(where: { $0.answers(to: word.text) }) {
                    command = subcommand
                    path.append(subcommand.commandName)
                    continue
                }
                let choices = word.quoted ? [] : word.text.split(separator: "|")
                if choices.count > 1 {
                    for choice in choices {
                        var chosen = words
                        chosen[index - 1] = Word(text: String(choice))
                        problems += self.problems(with: chosen)
                    }
                    return problems.reduce(into: []) { unique, problem in
                        if !unique.contains(problem) { unique.append(problem) }
                    }
                }
                if word.text.allSatisfy({ $0.isUppercase || $0.isNumber || "_-.…".contains($0) }) { return problems }
                if !command.takesPositionals {
                    guard let name = command.defaultSubcommand,
                        let subcommand = command.subcommands.first(where: { $0.answers(to: name) })
                    else {
                        problems.append("`\(path.joined(separator: " "))` has no subcommand `\(word.text)`")
                        return problems
                    }
                    command = subcommand
                    path.append(subcommand.commandName)
                }
            }
            takesSubcommand = false
            if !command.takesPositionals {
                problems.append("`\(path.joined(separator: " "))` takes no arguments, but the line gives it `\(word.text)`")
            }
        }
        return problems
    }

    func answers(to name: String) -> Bool { commandName == name || (aliases ?? []).contains(name) }
}

// MARK: - Names

/// The repository's files and folders and the names its Swift sources declare.
private struct SourceTree {
    /// The folders whose Swift files are searched for declarations, and against which (or against one
    /// of their modules' folders) a relative path in the docs may be written (`Files/`, `HTTP/…`).
    static let sourceFolders = ["Sources", "Server/Sources", "Tests", "Server/Tests"]
    /// File name endings that make a name in code font a path.
    static let pathEndings = [".swift", ".md", ".sh", ".json", ".txt", ".py", ".docc", ".yml", ".toml"]

    /// Names in code font that are not ours, each used by our sources: types and functions of Swift,
    /// Foundation, the Apple SDKs and the dependencies, and a Django REST framework class.
    static let outsideNames: Set<String> = [
        "Decodable", "Duration", "Int", "Int64", "Mutex", "URLComponents",  // Swift, Foundation
        "NSWorkspace", "NWPathMonitor", "SecKeyCreateWithData", "UIApplication",  // Apple SDKs
        "DatabasePool", "ValueObservation",  // GRDB
        "HTTPRequest", "HTTPResponse",  // swift-http-types
        "HTTPResponseError", "RouterMiddleware",  // Hummingbird
        "Logger", "StreamLogHandler",  // swift-log
        "NIOThreadPool", "SocketAddress",  // SwiftNIO
        "PostgresPreparedStatement",  // postgres-nio
        "CursorPagination",  // Django REST framework (the interop suite's server)
    ]
    /// HTTP header fields and authorization schemes, written as on the wire.
    static let httpNames: Set<String> = ["Authorization", "Basic", "Cookie", "ETag", "Expires", "Forwarded", "Vary"]
    /// Media types contain a `/` but are no path.
    static let mediaTypes: Set<String> = ["application/json"]

    /// Every file and folder, as a path from the root (build products, `.git` and `.swiftpm` left out).
    let paths: Set<String>
    /// The last part of every path.
    let pathNames: Set<String>
    /// Folders of modules: `Sources/OutpostCore`, `Server/Tests/IntegrationTests`, ….
    let moduleFolders: [String]
    /// Names declared as a struct, class, enum, protocol, actor, typealias or macro.
    let types: Set<String>
    /// Names declared as a func, var, let or enum case.
    let members: Set<String>
    /// Every identifier of the Swift sources.
    let identifiers: Set<String>

    init() throws {
        let root = Document.root.standardizedFileURL.path
        var paths: Set<String> = []
        let enumerator = FileManager.default.enumerator(
            at: Document.root, includingPropertiesForKeys: nil, options: [], errorHandler: nil)
        while let url = enumerator?.nextObject() as? URL {
            let name = url.lastPathComponent
            if name.hasPrefix(".build") || name == ".git" || name == ".swiftpm" {
                enumerator?.skipDescendants()
                continue
            }
            paths.insert(String(url.standardizedFileURL.path.dropFirst(root.count + 1)))
        }
        self.paths = paths
        pathNames = Set(paths.map { $0.split(separator: "/").last.map(String.init) ?? $0 })
        moduleFolders = paths.filter { path in
            Self.sourceFolders.contains { folder in
                path.hasPrefix(folder + "/") && !path.dropFirst(folder.count + 1).contains("/")
            }
        }.sorted()

        var types: Set<String> = []
        var members: Set<String> = []
        var identifiers: Set<String> = []
        for path in paths.sorted() where path.hasSuffix(".swift") {
            guard Self.sourceFolders.contains(where: { path.hasPrefix($0 + "/") }) else { continue }
            let source = try String(contentsOf: Document.root.appendingPathComponent(path), encoding: .utf8)
            Self.scan(source, types: &types, members: &members, identifiers: &identifiers)
        }
        self.types = types
        self.members = members
        self.identifiers = identifiers
    }

    /// Collects the declared and used names of one Swift file, comments left out.
    private static func scan(
        _ source: String, types: inout Set<String>, members: inout Set<String>, identifiers: inout Set<String>
    ) {
        let bytes = Array(source.utf8)
        let typeKeywords: Set = ["struct", "class", "enum", "protocol", "actor", "typealias", "macro"]
        let memberKeywords: Set = ["func", "var", "let", "case"]
        func isIdentifier(_ byte: UInt8) -> Bool {
            (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x30 && byte <= 0x39) || byte == 0x5F
        }
        var pending: String?  // the keyword whose name comes next
        var inCaseList = false  // after `case a`, a `,` declares another case
        var commentEnd = 0  // the text before this index is a comment: names are used there, never declared
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if index >= commentEnd, byte == 0x2F, index + 1 < bytes.count, [0x2F, 0x2A].contains(bytes[index + 1]) {
                // `//` to the end of the line, `/*` to `*/`
                commentEnd = index + 2
                if bytes[index + 1] == 0x2F {
                    while commentEnd < bytes.count, bytes[commentEnd] != 0x0A { commentEnd += 1 }
                } else {
                    while commentEnd + 1 < bytes.count, !(bytes[commentEnd] == 0x2A && bytes[commentEnd + 1] == 0x2F) {
                        commentEnd += 1
                    }
                    commentEnd += 2
                }
                index += 2
            } else if isIdentifier(byte) {
                let start = index
                while index < bytes.count, isIdentifier(bytes[index]) { index += 1 }
                let name = String(decoding: bytes[start..<index], as: UTF8.self)
                identifiers.insert(name)
                guard start >= commentEnd else { continue }
                if let keyword = pending {
                    if typeKeywords.contains(keyword) { types.insert(name) } else { members.insert(name) }
                }
                inCaseList = pending == "case"
                pending = typeKeywords.contains(name) || memberKeywords.contains(name) ? name : nil
            } else if index >= commentEnd, byte == 0x2C, inCaseList {  // `,` in `case a, b`
                pending = "case"
                inCaseList = false
                index += 1
            } else {
                // Blanks, comments and the backticks of an escaped name keep what comes next a declaration.
                if index >= commentEnd, ![0x20, 0x09, 0x0A, 0x0D, 0x60].contains(byte) {
                    pending = nil
                    inCaseList = false
                }
                index += 1
            }
        }
    }

    /// What is wrong with a name in code font, or `nil` when it exists or is no name this checks.
    func problem(with span: CodeSpan) -> String? {
        var text = span.text
        if span.after.hasPrefix(" DocC article") {
            let found = paths.contains { $0.hasSuffix("/\(text).md") && $0.contains(".docc/") }
            return found ? nil : "no DocC catalog has an article \(text).md"
        }
        // Code, commands, URLs, routes, options, environment paths: not names.
        if text.contains(where: { $0.isWhitespace || "(){}\"'=,:".contains($0) }) || text.isEmpty { return nil }
        if text.hasPrefix("/") || text.hasPrefix("$") || text.hasPrefix("-") || text.hasPrefix("#") { return nil }
        if Self.mediaTypes.contains(text) { return nil }
        if text.contains("/") || Self.pathEndings.contains(where: { text.hasSuffix($0) }) {
            return pathExists(text) ? nil : "no such file or folder in the repository"
        }
        if text.hasPrefix("@") { text.removeFirst() }  // an attribute: `@Transient`
        if let generic = text.firstIndex(of: "<"), text.hasSuffix(">") { text = String(text[..<generic]) }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.allSatisfy(Self.isIdentifier) || (parts.first == "" && parts.dropFirst().allSatisfy(Self.isIdentifier))
        else { return nil }
        if parts.first == "" {  // `.outpost`: a member
            return members.contains(parts[1]) ? nil : "no declaration of `\(parts[1])` in the Swift sources"
        }
        guard Self.isTypeLike(parts[0]) else { return nil }  // a lower-case word, a code, a constant
        for part in parts {
            if Self.isTypeLike(part) {
                let known =
                    types.contains(part) || moduleFolders.contains { $0.hasSuffix("/" + part) }
                    || Self.outsideNames.contains(part) || Self.httpNames.contains(part)
                if !known { return "no type `\(part)` is declared, and no module has that name" }
            } else if part.first?.isLowercase == true, !members.contains(part) {
                return "no declaration of `\(part)` in the Swift sources"
            }
        }
        return nil
    }

    static func isIdentifier(_ text: String) -> Bool {
        guard let first = text.first, first.isLetter || first == "_" else { return false }
        return text.allSatisfy { ($0.isLetter || $0.isNumber || $0 == "_") && $0.isASCII }
    }

    /// Upper camel case with at least one lower-case letter: `OutpostClient`, `ETag`; not `NULL` or `F_FULLFSYNC`.
    static func isTypeLike(_ text: String) -> Bool {
        guard let first = text.first, first.isUppercase, text.contains(where: \.isLowercase) else { return false }
        return !text.contains("_")
    }

    /// Whether `path` names a file or folder from the root, from a source folder or from a module's
    /// folder (as the docs write `Files/` for `Sources/OutpostCore/Files`); a bare file name matches
    /// one anywhere. `*`, `…` and `<Name>` stand for any part of a name; a Swift file may be named
    /// without `.swift`.
    func pathExists(_ path: String) -> Bool {
        var path = path
        if path.hasSuffix("/") { path.removeLast() }
        path = path.replacingOccurrences(of: "…", with: "*")
        while let open = path.firstIndex(of: "<"), let close = path[open...].firstIndex(of: ">") {
            path.replaceSubrange(open...close, with: "*")
        }
        let wildcard = path.contains("*")
        if !path.contains("/") {
            return wildcard ? pathNames.contains { Self.glob(path, matches: $0) } : pathNames.contains(path)
        }
        let prefixes = [""] + Self.sourceFolders.map { $0 + "/" } + moduleFolders.map { $0 + "/" }
        for prefix in prefixes {
            for candidate in [prefix + path, prefix + path + ".swift"] {
                if wildcard ? paths.contains(where: { Self.glob(candidate, matches: $0) }) : paths.contains(candidate) {
                    return true
                }
            }
        }
        return false
    }

    /// Whether `path` matches `pattern`, where `*` matches any characters but `/`.
    static func glob(_ pattern: String, matches path: String) -> Bool {
        func match(_ pattern: Substring, _ path: Substring) -> Bool {
            guard let first = pattern.first else { return path.isEmpty }
            if first == "*" {
                var rest = path
                while true {
                    if match(pattern.dropFirst(), rest) { return true }
                    guard let next = rest.first, next != "/" else { return false }
                    rest = rest.dropFirst()
                }
            }
            return path.first == first && match(pattern.dropFirst(), path.dropFirst())
        }
        return match(pattern[...], path[...])
    }
}

// MARK: - Manifests

private enum Manifest {
    /// The names of the products of one kind (`library`, `executable`) that a Package.swift declares,
    /// read as text: `.library(name: "X"`.
    static func products(_ kind: String, in manifest: String) -> [String] {
        let code = manifest.components(separatedBy: "\n")
            .filter { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("//") }.joined(separator: "\n")
        var names: [String] = []
        var rest = code[...]
        while let start = rest.range(of: ".\(kind)(") {
            rest = rest[start.upperBound...].drop { $0.isWhitespace }
            guard rest.hasPrefix("name:") else { continue }
            rest = rest.dropFirst("name:".count).drop { $0.isWhitespace }
            guard rest.hasPrefix("\""), let end = rest.dropFirst().firstIndex(of: "\"") else { continue }
            names.append(String(rest[rest.index(after: rest.startIndex)..<end]))
            rest = rest[end...]
        }
        return names
    }
}
