"""Shared pieces of the auth interop suites: a real `outpost serve` on a free loopback port,
the CLI for users and clients, loopback HTTP listeners (a redirect URI and an "attacker" site),
the sign-in forms read as a person's browser would post them, and redaction for messages.

Everything listens on 127.0.0.1 port 0; every process is stopped by its PID.
"""

import base64
import hashlib
import html.parser
import http.server
import os
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import unittest
import urllib.parse

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
BINARY = os.path.abspath(os.environ.get("OUTPOST_BINARY", os.path.join(REPO, ".build", "debug", "outpost")))
READY_TIMEOUT = 30.0
PASSWORD = "interop-password-1"  # a test account's password; still never printed
SCOPES = ["records:read", "records:write", "profile"]
DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"

_SECRET_PATTERNS = [
    re.compile(r"\b(op[acrdsf]_|fam_)[A-Za-z0-9_\-]+"),
    re.compile(r"(?i)((?:access_token|refresh_token|id_token|device_code|client_secret|password|form_token)"
               r"[\"']?\s*[:=]\s*[\"']?)[^\"'&\s,}]+"),
    re.compile(r"eyJ[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]*"),
]


def redact(text):
    """Text with anything that looks like a token, code, secret or password replaced."""
    text = str(text)
    for pattern in _SECRET_PATTERNS:
        text = pattern.sub(lambda m: (m.group(1) if m.lastindex else "") + "[redacted]", text)
    return text.replace(PASSWORD, "[redacted]")


def describe(response):
    """A response for an assertion message: status and body, secrets redacted, bounded."""
    location = response.headers.get("Location")
    where = f" -> {redact(location)}" if location else ""
    return f"HTTP {response.status_code}{where}: {redact(response.text[:600])}"


def pkce_pair():
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


class TestCase(unittest.TestCase):
    """Assertion messages pass through `redact`: a failing comparison must not print a token."""

    def _formatMessage(self, msg, standardMsg):
        return redact(super()._formatMessage(msg, standardMsg))


class Suite(TestCase):
    """A test class whose set-up starts what its tests share (servers, loopback sites, helper processes,
    a browser), each through `keep`, and whose tear-down stops all of it, last started first, also
    when the set-up failed half way."""

    @classmethod
    def setUpClass(cls):
        cls._stops = []
        try:
            cls.start()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def start(cls):
        """Override: start what the tests share, each through `keep`."""

    @classmethod
    def keep(cls, thing, stop=None):
        """Returns `thing`, stopped at the end by `stop` (by default its `stop`, `quit` or `close`)."""
        if stop is None:
            stop = getattr(thing, "stop", None) or getattr(thing, "quit", None) or getattr(thing, "close")
        cls._stops.append(stop)
        return thing

    @classmethod
    def tearDownClass(cls):
        failure = None
        stops, cls._stops = getattr(cls, "_stops", []), []
        for stop in reversed(stops):
            try:
                stop()
            except Exception as error:  # the others still stop; the first failure is reported
                failure = failure or error
        if failure:
            raise failure


class CLIError(AssertionError):
    pass


class OutpostServer:
    """`outpost serve --port 0 --database <tmp>` from BINARY, with CLI helpers on the same database."""

    def __init__(self, binary=BINARY):
        if not os.access(binary, os.X_OK):
            raise RuntimeError(f"no outpost binary at {binary}; build it (swift build --package-path Server) or set OUTPOST_BINARY")
        self.binary = binary
        self.folder = tempfile.mkdtemp(prefix="outpost-interop-")
        self.database = os.path.join(self.folder, "interop.sqlite")
        self.log_path = os.path.join(self.folder, "serve.log")
        self.process = None
        self.url = None

    # The CLI on this server's database.

    def cli(self, *args, stdin=""):
        result = subprocess.run(
            [self.binary, *args, "--database", self.database], input=stdin, capture_output=True, text=True, timeout=60)
        if result.returncode != 0:
            raise CLIError(f"outpost {args[0]} {args[1] if len(args) > 1 else ''} exited {result.returncode}: "
                           f"{redact(result.stderr.strip() or result.stdout.strip())}")
        return result.stdout

    def add_user(self, username, password=PASSWORD):
        self.cli("users", "add", username, stdin=password + "\n")
        return username

    def add_client(self, name, redirect_uris=(), grants=(), scopes=SCOPES, confidential=False):
        args = ["clients", "add", name]
        for uri in redirect_uris:
            args += ["--redirect-uri", uri]
        for grant in grants:
            args += ["--grant", grant]
        for scope in scopes:
            args += ["--scope", scope]
        if confidential:
            args.append("--confidential")
        output = self.cli(*args)
        client_id = re.search(r"^client_id:\s*(\S+)", output, re.M)
        secret = re.search(r"^client_secret:\s*(\S+)", output, re.M)
        if not client_id or (confidential and not secret):
            raise CLIError("outpost clients add did not print the client id (and secret)")
        return client_id.group(1), (secret.group(1) if secret else None)

    # The server process.

    def start(self, extra_args=()):
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                [self.binary, "serve", "--port", "0", "--database", self.database, "--log-level", "warning",
                 *extra_args],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            with open(self.log_path, "r", errors="replace") as log:
                # "Outpost server listening on": with --metrics-port, the metrics listener's line may come first.
                match = re.search(r"server listening on (http://[0-9.]+:[0-9]+)", log.read())
            if match:
                self.url = match.group(1)
                return self
            if self.process.poll() is not None:
                raise RuntimeError(f"outpost serve exited {self.process.returncode}: {redact(self.log())}")
            time.sleep(0.05)  # polling for readiness, bounded by READY_TIMEOUT
        self.stop()
        raise RuntimeError(f"outpost serve did not report its address within {READY_TIMEOUT:.0f} s")

    def log(self):
        try:
            with open(self.log_path, "r", errors="replace") as log:
                return log.read()[-4000:]
        except OSError:
            return ""

    def stop(self):
        if self.process and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=15)
        self.process = None
        shutil.rmtree(self.folder, ignore_errors=True)


class _Recorder(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        server = self.server
        if self.path.split("?")[0] in server.pages:
            body = server.pages[self.path.split("?")[0]].encode()
        else:
            with server.condition:
                server.hits.append(self.path)
                server.condition.notify_all()
            body = server.answer.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):  # requests carry codes: never log them
        pass


class LoopbackSite:
    """A small HTTP server on 127.0.0.1 port 0 in a thread.

    Requests for paths in `pages` get that HTML (an attacker's site); any other request is recorded
    as a hit (a redirect URI receiving an authorization response) and answered with a short page."""

    ANSWER = ("<!doctype html><html lang=en><meta charset=utf-8><title>Back in the app</title>"
              "<meta name=viewport content='width=device-width, initial-scale=1'>"
              "<body style='font:16px system-ui;margin:3rem'><h1>Back in the app</h1>"
              "<p>The loopback redirect URI received the answer.</p></body></html>")

    def __init__(self, pages=None):
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
        self.httpd.pages = dict(pages or {})
        self.httpd.hits = []
        self.httpd.answer = self.ANSWER
        self.httpd.condition = threading.Condition()
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.origin = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def set_page(self, path, text):
        self.httpd.pages[path] = text

    @property
    def hits(self):
        with self.httpd.condition:
            return list(self.httpd.hits)

    def wait_for_hit(self, timeout=10.0, after=0):
        """The query of the first hit after the first `after` hits, as a dict, or None at the timeout."""
        with self.httpd.condition:
            self.httpd.condition.wait_for(lambda: len(self.httpd.hits) > after, timeout=timeout)
            if len(self.httpd.hits) <= after:
                return None
            path = self.httpd.hits[after]
        return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(path).query, keep_blank_values=True))

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


class _FormParser(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.forms = []
        self.alerts = []
        self._alert_depth = 0
        self.title = ""
        self._in_title = False
        self.text = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form":
            self.forms.append({"action": attrs.get("action", ""), "method": (attrs.get("method") or "get").lower(),
                               "fields": {}, "inputs": [], "buttons": []})
        elif tag == "input" and self.forms:
            form = self.forms[-1]
            form["inputs"].append(attrs)
            if attrs.get("type") == "hidden" and attrs.get("name"):
                form["fields"][attrs["name"]] = attrs.get("value", "")
        elif tag == "button" and self.forms:
            self.forms[-1]["buttons"].append(attrs)
        elif tag == "title":
            self._in_title = True
        if attrs.get("role") == "alert":
            self._alert_depth = 1
            self.alerts.append("")
        elif self._alert_depth:
            self._alert_depth += 1

    def handle_endtag(self, tag):
        if tag == "title":
            self._in_title = False
        if self._alert_depth:
            self._alert_depth -= 1

    def handle_data(self, data):
        if self._in_title:
            self.title += data
        if self._alert_depth:
            self.alerts[-1] += data
        self.text.append(data)


def parse_page(text):
    parser = _FormParser()
    parser.feed(text)
    parser.body_text = " ".join(" ".join(parser.text).split())
    return parser


def decision_value(form, want):
    """The value of the form's button that means allow/deny (by value, else by its name)."""
    for button in form["buttons"]:
        if button.get("value") == want:
            return button.get("name") or "decision", want
    if want == "allow":  # a first step of a two-step page ("Continue", then Allow on the next page)
        for button in form["buttons"]:
            if button.get("value") == "continue":
                return button.get("name") or "decision", "continue"
    return "decision", want


class FormBrowser:
    """Posts the server's HTML forms with `requests` the way a browser does (cookies kept, redirects
    to the client not followed, `Origin` and `Sec-Fetch-Site: same-origin` sent). It always sends the
    page's own origin; a real Chromium sends `Origin: null` instead when the page has
    `Referrer-Policy: no-referrer`. The browser suite covers what real browsers send."""

    def __init__(self, base):
        import requests
        self.base = base
        self.session = requests.Session()

    def get(self, url):
        return self.session.get(url, allow_redirects=False, timeout=30)

    def submit(self, page_response, values, decision="allow", origin=None):
        """Fills and posts the page's first POST form; returns the response (redirects not followed)."""
        page = parse_page(page_response.text)
        forms = [form for form in page.forms if form["method"] == "post"]
        if not forms:
            raise AssertionError(f"no form on the page: {describe(page_response)}")
        form = forms[0]
        fields = dict(form["fields"])
        input_names = {attrs.get("name") for attrs in form["inputs"] if attrs.get("name")}
        for name, value in values.items():
            if name in input_names:  # fields the page asks for (none when already signed in)
                fields[name] = value
        if decision:
            name, value = decision_value(form, decision)
            fields[name] = value
        action = urllib.parse.urljoin(page_response.url, form["action"] or page_response.url)
        # What a browser sends with a form post from the page itself.
        headers = {"Origin": origin or self.base, "Sec-Fetch-Site": "same-origin", "Referer": page_response.url}
        return self.session.post(action, data=fields, headers=headers, allow_redirects=False, timeout=30)


def run_suite(name, module_globals, epilogue=None):
    """Runs the module's tests verbosely and ends with one summary line; exit status 1 on any failure."""
    import sys
    loader = unittest.TestLoader()
    suite = loader.loadTestsFromModule(sys.modules[module_globals["__name__"]])
    started = time.monotonic()
    result = unittest.TextTestRunner(verbosity=2, stream=sys.stdout).run(suite)
    elapsed = time.monotonic() - started
    if epilogue:
        print(epilogue)
    failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    passed = max(0, result.testsRun - failed - len(result.skipped) - len(result.expectedFailures))
    verdict = "PASS" if failed == 0 and result.testsRun > 0 else "FAIL"
    print(f"{name}: {verdict} - {result.testsRun} tests, {passed} passed, {failed} failed, "
          f"{len(result.skipped)} skipped in {elapsed:.1f} s")
    sys.exit(0 if verdict == "PASS" else 1)
