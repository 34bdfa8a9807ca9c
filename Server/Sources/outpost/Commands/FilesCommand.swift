import ArgumentParser
import Foundation
import Outpost

struct FilesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "files",
        abstract: "Upload, download and delete files on an Outpost server, streamed, resumable, with progress.",
        subcommands: [Put.self, Get.self, Remove.self])

    struct Put: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Upload a file (sign in first: writing needs a user). A broken upload goes on where it stopped.")

        @Argument(help: "The file to upload.") var path: String
        @Argument(help: "The name on the server (default: the file's name).") var name: String?
        @Option(name: .customLong("content-type"), help: "Its media type.") var contentType = "application/octet-stream"
        @Option(name: .customLong("upload-id"), help: "Continue an earlier upload that failed (its id was printed).")
        var uploadID: String?
        @OptionGroup var options: SignInOptions

        func run() async throws {
            let url = URL(fileURLWithPath: path)
            guard FileManager.default.isReadableFile(atPath: url.path) else {
                throw ValidationError("Cannot read \(path); give the path of a file")
            }
            let name = self.name ?? url.lastPathComponent
            let id = uploadID ?? UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
            FileHandle.standardError.write(Data("upload id \(id): if this breaks, run again with --upload-id \(id)\n".utf8))
            try await RecordsCommand.run(options) { client in
                let transfer = client.files.upload(from: url, as: name, contentType: contentType, uploadID: id)
                let file = try await TransferProgress.show(transfer, verb: "uploaded").file
                print("\(file.name)\t\(file.size) bytes\tsha256 \(file.sha256)\tETag \(file.etag)")
            }
        }
    }

    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Download a file. An interrupted download resumes from its .part file when run again.")

        @Argument(help: "The name on the server.") var name: String
        @Argument(help: "Where to write it (default: the name, in this folder).") var path: String?
        @OptionGroup var options: SignInOptions

        func run() async throws {
            let url = URL(fileURLWithPath: path ?? name)
            try await RecordsCommand.run(options) { client in
                let result = try await TransferProgress.show(client.files.download(name, to: url), verb: "downloaded")
                let resumed = result.resumedFrom > 0 ? "\tresumed at \(result.resumedFrom)" : ""
                print("\(url.path)\t\(result.size) bytes\tsha256 \(result.sha256)\(resumed)")
            }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "rm", abstract: "Delete a file (its owner only).")

        @Argument(help: "The name on the server.") var name: String
        @OptionGroup var options: SignInOptions

        func run() async throws {
            try await RecordsCommand.run(options) { client in
                try await client.files.delete(name)
                print("deleted \(name)")
            }
        }
    }
}

/// Shows a transfer's progress on standard error: a bar redrawn in place on a terminal, otherwise
/// a plain line at every tenth (so logs stay short).
enum TransferProgress {
    static func show<T>(_ transfer: FileTransfer<T>, verb: String) async throws -> T {
        let terminal = isatty(STDERR_FILENO) == 1
        var lastTenth = -1
        var lastDrawn = -1
        var last: FileTransferProgress?
        for await step in transfer.progress {
            last = step
            if terminal {
                // Redrawn when the bar moves by a thousandth, not for every chunk.
                let mille = Int((step.fractionDone ?? 0) * 1000)
                guard mille != lastDrawn else { continue }
                lastDrawn = mille
                draw(step)
            } else if let fraction = step.fractionDone, Int(fraction * 10) > lastTenth {
                lastTenth = Int(fraction * 10)
                FileHandle.standardError.write(Data("\(Int(fraction * 100))% (\(step.bytesDone) bytes)\n".utf8))
            }
        }
        if terminal, last != nil { FileHandle.standardError.write(Data("\n".utf8)) }
        let result = try await transfer.result
        if !terminal, let last { FileHandle.standardError.write(Data("\(verb) \(last.bytesDone) bytes\n".utf8)) }
        return result
    }

    static func draw(_ step: FileTransferProgress) {
        let width = 30
        let fraction = min(1, step.fractionDone ?? 0)
        let filled = Int(fraction * Double(width))
        let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
        let total = step.totalBytes.map { "/\(megabytes($0))" } ?? ""
        FileHandle.standardError.write(Data("\r\(bar) \(megabytes(step.bytesDone))\(total) MB".utf8))
    }

    static func megabytes(_ bytes: Int64) -> String { String(format: "%.1f", Double(bytes) / 1_048_576) }
}
