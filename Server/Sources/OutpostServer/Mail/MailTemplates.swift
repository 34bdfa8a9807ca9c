import Foundation
import Mustache

/// The messages the server sends, as Mustache templates (swift-mustache): built-in defaults, each
/// replaceable by a file of the operator's folder (``MailConfiguration/templatesDirectory``,
/// `outpost serve --mail-templates DIR`).
///
/// Files, each optional: `reset-subject.mustache`, `reset-text.mustache`, `reset-html.mustache`,
/// `verify-subject.mustache`, `verify-text.mustache`, `verify-html.mustache`. Variables: `link`,
/// `username`, `expiry` (e.g. "30 minutes"), `server` (the server's host name). Text and subject
/// templates are rendered as they are; HTML templates escape what they insert.
struct MailTemplates: Sendable {
    enum Kind: String, Sendable, CaseIterable {
        case reset, verify
    }

    struct Parts: Sendable {
        var subject: MustacheTemplate
        var text: MustacheTemplate
        var html: MustacheTemplate?
    }

    let sets: [Kind: Parts]

    /// The largest template file read: 64 KiB.
    static let maxFileBytes = 64 * 1024

    /// The defaults, with the files of `directory` in their place where it has them.
    ///
    /// - Throws: ``MailError`` `invalid_template` for a file that is too large or does not parse.
    init(directory: String?) throws {
        var sets: [Kind: Parts] = [:]
        for kind in Kind.allCases {
            func load(_ part: String, _ fallback: String?, text: Bool) throws -> MustacheTemplate? {
                var source = fallback
                if let directory {
                    let path = URL(fileURLWithPath: directory).appendingPathComponent("\(kind.rawValue)-\(part).mustache").path
                    if FileManager.default.fileExists(atPath: path) {
                        guard let data = FileManager.default.contents(atPath: path), data.count <= Self.maxFileBytes else {
                            throw MailError("invalid_template", "\(path) is larger than \(Self.maxFileBytes) bytes or unreadable")
                        }
                        source = String(decoding: data, as: UTF8.self)
                    }
                }
                guard let source else { return nil }
                do {
                    return try MustacheTemplate(string: (text ? "{{% CONTENT_TYPE: TEXT}}" : "") + source)
                } catch {
                    throw MailError("invalid_template", "The \(kind.rawValue)-\(part) mail template does not parse: \(error)")
                }
            }
            let defaults = Self.defaults[kind]!
            sets[kind] = Parts(
                subject: try load("subject", defaults.subject, text: true)!,
                text: try load("text", defaults.text, text: true)!, html: try load("html", defaults.html, text: false))
        }
        self.sets = sets
    }

    /// Subject (one line), text and HTML of a message of `kind`.
    func render(_ kind: Kind, link: String, username: String, expiry: String, server: String) -> (
        subject: String, text: String, html: String?
    ) {
        let values: [String: String] = ["link": link, "username": username, "expiry": expiry, "server": server]
        let set = sets[kind]!
        let subject = set.subject.render(values).split(whereSeparator: \.isNewline).joined(separator: " ")
            .trimmingCharacters(in: .whitespaces)
        return (subject, set.text.render(values), set.html?.render(values))
    }

    static let defaults: [Kind: (subject: String, text: String, html: String?)] = [
        .reset: (
            "Reset your password on {{server}}",
            """
            Hello {{username}},

            Someone asked to reset the password of your account on {{server}}. If it was you, open this link
            within {{expiry}} and choose a new password:

            {{link}}

            Every device signed in to your account is signed out when you do. If it was not you, ignore this
            message: your password stays as it is.

            """,
            """
            <p>Hello {{username}},</p>
            <p>Someone asked to reset the password of your account on {{server}}. If it was you, open this link within {{expiry}} and choose a new password:</p>
            <p><a href="{{link}}">Choose a new password</a></p>
            <p>Every device signed in to your account is signed out when you do. If it was not you, ignore this message: your password stays as it is.</p>

            """
        ),
        .verify: (
            "Confirm your e-mail address on {{server}}",
            """
            Hello {{username}},

            Open this link within {{expiry}} to confirm that this address belongs to your account on {{server}}:

            {{link}}

            If you did not ask for this, ignore this message.

            """,
            """
            <p>Hello {{username}},</p>
            <p>Open this link within {{expiry}} to confirm that this address belongs to your account on {{server}}:</p>
            <p><a href="{{link}}">Confirm my address</a></p>
            <p>If you did not ask for this, ignore this message.</p>

            """
        ),
    ]
}
