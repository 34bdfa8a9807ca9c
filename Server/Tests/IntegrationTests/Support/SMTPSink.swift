import Foundation
import OutpostTestSupport

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
    private let helper: PythonHelper

    static var isEnabled: Bool { PythonHelper.python != nil }

    /// Starts the sink; `tls` offers and requires STARTTLS, `credentials` requires AUTH.
    static func start(tls: Bool = false, credentials: (user: String, password: String)? = nil) async throws -> SMTPSink {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Interop/mail/smtp_sink.py")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-smtp-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let arguments =
            [folder.path] + (tls ? ["--tls"] : []) + (credentials.map { ["--auth", "\($0.user):\($0.password)"] } ?? [])
        do {
            let (helper, line) = try await PythonHelper.start(
                script, arguments: arguments, deadline: .now + .seconds(60))
            guard let ready = try? JSONSerialization.jsonObject(with: line) as? [String: Any], let port = ready["port"] as? Int
            else {
                await helper.killNow()
                throw PythonHelper.Failure("smtp_sink.py printed no readiness line (is aiosmtpd installed?)")
            }
            return SMTPSink(port: port, certificate: ready["cert"] as? String, folder: folder, helper: helper)
        } catch {
            try? FileManager.default.removeItem(at: folder)
            throw error
        }
    }

    /// Stops it, waits for it, removes the folder.
    func stop() async {
        await helper.stop()
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
        guard let arrived else { throw PythonHelper.Failure("\(count) message(s) did not arrive within 20 s") }
        return arrived
    }
}
