import Foundation

/// Plain, accessible HTML pages for the browser flows: no JavaScript, labelled fields, one heading.
enum HTMLPage {
    static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.count)
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(character)
            }
        }
        return out
    }

    static func page(title: String, body: String) -> String {
        """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>\(escape(title)) · Outpost</title>
        <style>
        body { font: 16px/1.5 system-ui, sans-serif; max-width: 28rem; margin: 3rem auto; padding: 0 1rem; color: #1b1b1b; }
        label { display: block; margin-top: 1rem; font-weight: 600; }
        input[type=text], input[type=password] { width: 100%; padding: .5rem; font-size: 1rem; box-sizing: border-box; }
        .actions { margin-top: 1.5rem; display: flex; gap: .75rem; }
        button { padding: .6rem 1.2rem; font-size: 1rem; }
        .error { color: #a00000; border-left: 4px solid #a00000; padding-left: .75rem; }
        </style>
        </head>
        <body>
        <main>
        <h1>\(escape(title))</h1>
        \(body)
        </main>
        </body>
        </html>
        """
    }

    static func hidden(_ fields: [String: String]) -> String {
        fields.sorted { $0.key < $1.key }
            .map { "<input type=\"hidden\" name=\"\(escape($0.key))\" value=\"\(escape($0.value))\">" }
            .joined(separator: "\n")
    }

    static func error(_ message: String?) -> String {
        guard let message else { return "" }
        return "<p class=\"error\" role=\"alert\">\(escape(message))</p>"
    }

    /// The two choices every consent form ends with.
    static let decisionButtons = """
        <div class="actions">
        <button type="submit" name="decision" value="allow">Allow</button>
        <button type="submit" name="decision" value="deny">Deny</button>
        </div>
        """

    static func credentials(signedInAs user: String?) -> String {
        if let user {
            return "<p>Signed in as <strong>\(escape(user))</strong>.</p>"
        }
        return """
            <label for="username">Username</label>
            <input type="text" id="username" name="username" autocomplete="username" required>
            <label for="password">Password</label>
            <input type="password" id="password" name="password" autocomplete="current-password" required>
            """
    }
}
