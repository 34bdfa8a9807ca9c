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
        return "<p class=\"error\" id=\"error\" role=\"alert\">\(escape(message))</p>"
    }

    /// The two choices every consent form ends with. Deny skips the browser's required-field check,
    /// so it works with empty credentials.
    static let decisionButtons = """
        <div class="actions">
        <button type="submit" id="allow" name="decision" value="allow">Allow</button>
        <button type="submit" id="deny" name="decision" value="deny" formnovalidate>Deny</button>
        </div>
        """

    static let continueButton = """
        <div class="actions">
        <button type="submit" id="continue" name="decision" value="continue">Continue</button>
        </div>
        """

    /// Below the sign-in form when the server has mail: to ``MailRoutes/forgotPath``.
    static let forgotPasswordLink = """
        <p id="forgot"><a id="forgot-password" href="/password/forgot">Forgot password?</a></p>
        """

    /// One "Continue with NAME" button per upstream provider ("Sign in with Apple" for Apple, in
    /// Apple's words), inside the page's form so that its form token covers the press. They skip
    /// the browser's required-field check: no password is needed.
    static func upstreamButtons(_ providers: [UpstreamProvider]) -> String {
        guard !providers.isEmpty else { return "" }
        let buttons = providers.map { provider in
            let label = provider.kind == .apple ? "Sign in with Apple" : "Continue with \(provider.name)"
            return """
                <button type="submit" id="upstream-\(escape(provider.name))" name="upstream" value="\(escape(provider.name))" formnovalidate>\(escape(label))</button>
                """
        }
        return "<div class=\"actions upstream\" id=\"upstream\">\n\(buttons.joined(separator: "\n"))\n</div>"
    }

    /// The requested scopes in words, one item each (`data-scope` holds the scope itself).
    static func scopeList(_ scope: String) -> String {
        let items = scope.split(separator: " ").map {
            "<li data-scope=\"\(escape(String($0)))\">\(escape(Scope.describe(String($0))))</li>"
        }
        guard !items.isEmpty else { return "<p id=\"scopes\">It asks for no particular access.</p>" }
        return "<ul id=\"scopes\">\(items.joined())</ul>"
    }

    /// The credential fields, or who is signed in with a way out ("not you?") that signs out and
    /// comes back to `returnTo`.
    static func credentials(signedInAs user: String?, returnTo: String) -> String {
        if let user {
            let signOut = "/oauth/logout?" + URLEncodedForm.encode([("return_to", returnTo)])
            return """
                <p id="signed-in">Signed in as <strong>\(escape(user))</strong> — not you? <a id="sign-out" href="\(escape(signOut))">Sign out</a></p>
                """
        }
        return """
            <label for="username">Username</label>
            <input type="text" id="username" name="username" autocomplete="username" autocapitalize="none" spellcheck="false" required>
            <label for="password">Password</label>
            <input type="password" id="password" name="password" autocomplete="current-password" required>
            """
    }
}
