import Foundation
import OutpostTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// A real SMTP server, aiosmtpd (`Server/Tests/Interop/mail/smtp_sink.py`), on a port of 127.0.0.1
/// the OS picks, run by the python that `OUTPOST_INTEROP_PYTHON` names; every message it accepts
/// lands in ``folder`` as a JSON file, which ``messages()`` reads.
struct SMTPSink: Sendable {
    struct Message: Sendable {
        var mailFrom: String
        var recipients: [String]
        var raw: String
        var subject: String
        var from: String
        var to: String
        var headerNames: [String]
        var text: String
        var html: String?
        var tls: Bool
        var authenticated: Bool

        /// The first `http…` link in the text part.
        var link: String? {
            text.split(whereSeparator: { $0.isWhitespace }).first { $0.hasPrefix("http://") || $0.hasPrefix("https://") }
                .map(String.init)
        }
    }

    let port: Int
    /// The self-signed certificate, with `tls`.
    let certificate: String?
    let folder: URL
    let pid: Int32
    private let exited: ProcessExit
    private let stdin: FileHandle

    static var python: String? { DjangoServer.python }
    static var isEnabled: Bool { python != nil }

    /// Starts the sink; `tls` offers and requires STARTTLS, `credentials` requires AUTH.
    static func start(tls: Bool = false, credentials: (user: String, password: String)? = nil) async throws -> SMTPSink {
        guard let python else { throw DjangoServer.Failure("OUTPOST_INTEROP_PYTHON is not set") }
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Interop/mail/smtp_sink.py")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-smtp-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments =
            [script.path, folder.path] + (tls ? ["--tls"] : [])
            + (credentials.map { ["--auth", "\($0.user):\($0.password)"] } ?? [])
        var environment = ProcessInfo.processInfo.environment
        environment["PYTHONDONTWRITEBYTECODE"] = "1"
        environment["PYTHONUNBUFFERED"] = "1"
        process.environment = environment
        let output = Pipe()
        let input = Pipe()
        process.standardOutput = output
        process.standardInput = input
        process.standardError = FileHandle.nullDevice
        let exited = ProcessExit(watching: process)
        try process.run()
        try? output.fileHandleForWriting.close()
        let pid = process.processIdentifier
        do {
            let line = try await firstLine(of: output.fileHandleForReading, pid: pid)
            guard let ready = try JSONSerialization.jsonObject(with: line) as? [String: Any], let port = ready["port"] as? Int
            else { throw DjangoServer.Failure("smtp_sink.py printed no readiness line") }
            return SMTPSink(
                port: port, certificate: ready["cert"] as? String, folder: folder, pid: pid, exited: exited,
                stdin: input.fileHandleForWriting)
        } catch {
            kill(pid, SIGKILL)
            await exited.wait()
            try? FileManager.default.removeItem(at: folder)
            throw error
        }
    }

    /// Closes its stdin (it stops), waits for it, removes the folder.
    func stop() async {
        try? stdin.close()
        let pid = pid
        let escalation = Task {
            try await Task.sleep(for: .seconds(10))  // a bound on a graceful stop, not a synchronisation
            kill(pid, SIGKILL)
        }
        await exited.wait()
        escalation.cancel()
        try? FileManager.default.removeItem(at: folder)
    }

    /// Every message received so far, in order.
    func messages() throws -> [Message] {
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".json") }.sorted()
        return try names.map { name in
            let object =
                try JSONSerialization.jsonObject(with: Data(contentsOf: folder.appendingPathComponent(name))) as? [String: Any]
                ?? [:]
            return Message(
                mailFrom: object["mail_from"] as? String ?? "", recipients: object["rcpt_tos"] as? [String] ?? [],
                raw: object["raw"] as? String ?? "", subject: object["subject"] as? String ?? "",
                from: object["from"] as? String ?? "", to: object["to"] as? String ?? "",
                headerNames: object["header_names"] as? [String] ?? [], text: object["text"] as? String ?? "",
                html: object["html"] as? String, tls: object["tls"] as? Bool ?? false,
                authenticated: object["authenticated"] as? Bool ?? false)
        }
    }

    /// Waits (at most 20 s) until `count` messages have arrived, and returns them all.
    func awaitMessages(_ count: Int) async throws -> [Message] {
        let arrived = try await eventually(within: .seconds(20), every: .milliseconds(20)) { () -> [Message]? in
            let messages = try self.messages()
            return messages.count >= count ? messages : nil
        }
        guard let arrived else { throw DjangoServer.Failure("\(count) message(s) did not arrive within 20 s") }
        return arrived
    }

    /// Reads `handle` up to the first newline on a thread of its own; gives up after 60 s.
    private static func firstLine(of handle: FileHandle, pid: Int32) async throws -> Data {
        let watchdog = Task {
            try await Task.sleep(for: .seconds(60))  // a bound on start-up, not a synchronisation
            kill(pid, SIGKILL)  // ends the read below (EOF)
        }
        defer { watchdog.cancel() }
        let line = await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                var line = Data()
                while true {
                    let chunk = handle.availableData
                    if chunk.isEmpty { break }
                    line.append(chunk)
                    if let newline = line.firstIndex(of: UInt8(ascii: "\n")) {
                        line = line[..<newline]
                        break
                    }
                }
                continuation.resume(returning: line)
            }
        }
        guard !line.isEmpty else { throw DjangoServer.Failure("smtp_sink.py did not start (is aiosmtpd installed?)") }
        return line
    }
}
