"""Files and live changes of `outpost serve`, used by software nobody here wrote:

- curl uploads a file (from disk and, chunked, from a pipe) and resumes a broken download with
  `--continue-at -`;
- Python requests drives byte ranges, If-Range, conditional GETs and the resumable-upload protocol
  of docs/PROTOCOL.md;
- headless Chromium opens script-bearing files (HTML, SVG, HTML posing as text or as an image) that a
  user uploaded, at the top level, in frames and as objects of the server's own pages, and no script
  of theirs runs as the server's origin; with `--files-url` it follows the server's redirect to the
  separate files origin;
- headless Chromium's own `EventSource` follows a change feed while the server ends every stream
  after a second (`--changes-max-stream`), so the browser reconnects with `Last-Event-ID` several
  times, and must see every public change exactly once, in order, and never another user's
  private record; a plain streaming reader resumes with `Last-Event-ID` after writes made while it
  was away.

Run: OUTPOST_BINARY=Server/.build/debug/outpost .build-venv/bin/python Server/Tests/Interop/live/live_test.py
"""

import base64
import hashlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "auth"))

import requests  # noqa: E402

import harness  # noqa: E402
from browser_test import new_driver  # noqa: E402
from harness import describe  # noqa: E402

WAIT = 30.0
MAX_EVENTS = 10_000  # bound on what one SSE read collects
MAX_LINE = 1 << 20  # bound on one SSE line


def sha256_digest_header(data):
    return "sha-256=:" + base64.b64encode(hashlib.sha256(data).digest()).decode() + ":"


class SSEReader:
    """A small, bounded text/event-stream reader over `requests` (WHATWG HTML §9.2 field rules)."""

    def __init__(self, response):
        self.response = response
        self.lines = response.iter_lines(chunk_size=1, decode_unicode=False)

    def next_event(self):
        """The next event as {id, event, data}, or None when the stream ends."""
        fields = {"event": "message", "data": []}
        for raw in self.lines:
            if len(raw) > MAX_LINE:
                raise AssertionError("an SSE line longer than 1 MiB")
            line = raw.decode("utf-8")
            if line == "":
                if fields["data"] or "id" in fields:
                    return {"id": fields.get("id"), "event": fields["event"], "data": "\n".join(fields["data"])}
                fields = {"event": "message", "data": []}
                continue
            if line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "data":
                fields["data"].append(value)
            elif name in ("id", "event", "retry"):
                fields[name] = value
        return None

    def close(self):
        self.response.close()


class FilesAndChanges(harness.Suite):
    driver = None  # Chromium, started by the first test that needs it

    @classmethod
    def start(cls):
        cls.keep(None, cls.quit_driver)
        cls.folder = tempfile.mkdtemp(prefix="outpost-live-interop-")
        cls.keep(None, lambda: shutil.rmtree(cls.folder, ignore_errors=True))
        cls.server = cls.keep(harness.OutpostServer())
        cls.server.add_user("ada")
        cls.server.add_user("bob")
        cls.client_id, _ = cls.server.add_client(
            "Live interop", grants=["password", "refresh_token"])
        # Every stream ends after about a second, so readers must reconnect and resume.
        cls.server.start(extra_args=["--changes-heartbeat", "1", "--changes-max-stream", "1"])
        cls.base = cls.server.url
        cls.ada = cls.token("ada")
        cls.bob = cls.token("bob")

    @classmethod
    def quit_driver(cls):
        if cls.driver:
            cls.driver.quit()
            cls.driver = None

    @classmethod
    def token(cls, username):
        metadata = requests.get(cls.base + "/.well-known/oauth-authorization-server", timeout=WAIT).json()
        answer = requests.post(metadata["token_endpoint"], data={
            "grant_type": "password", "username": username, "password": harness.PASSWORD,
            "client_id": cls.client_id, "scope": "records:read records:write profile"}, timeout=WAIT)
        if answer.status_code != 200:
            raise AssertionError(f"password grant for {username}: {describe(answer)}")
        return answer.json()["access_token"]

    def auth(self, token):
        return {"Authorization": f"Bearer {token}"}

    def file_path(self, name, data):
        path = os.path.join(self.folder, name)
        with open(path, "wb") as handle:
            handle.write(data)
        return path

    def curl(self, *args, stdin=None):
        result = subprocess.run(["curl", "--silent", "--show-error", *args], input=stdin, capture_output=True,
                                timeout=WAIT * 2)
        return result.returncode, result.stdout.decode(errors="replace"), harness.redact(result.stderr.decode())

    # Files

    def test_curl_uploads_and_resumes_a_broken_download(self):
        data = secrets.token_bytes(3_000_000)
        source = self.file_path("curl-source.bin", data)
        url = f"{self.base}/files/curl-blob.bin"
        header = f"Authorization: Bearer {self.ada}"
        code, out, err = self.curl("-T", source, "-H", header, "-H", "Content-Type: application/x-test",
                                   "-o", "/dev/null", "-w", "%{http_code}", url)
        self.assertEqual((code, out), (0, "201"), err)
        # Replaced from a pipe: curl sends it chunked, with no Content-Length.
        replaced = secrets.token_bytes(2_500_000) + data[:100]
        code, out, err = self.curl("-T", "-", "-H", header, "-o", "/dev/null", "-w", "%{http_code}", url,
                                   stdin=replaced)
        self.assertEqual((code, out), (0, "200"), err)

        # A download that broke after 1,000,000 bytes (curl fetched that range), resumed by curl.
        target = os.path.join(self.folder, "curl-copy.bin")
        code, _, err = self.curl("--fail", "-r", "0-999999", "-o", target, url)
        self.assertEqual(code, 0, err)
        self.assertEqual(os.path.getsize(target), 1_000_000)
        code, out, err = self.curl("--fail", "-C", "-", "-o", target, "-w", "%{http_code}", url)
        self.assertEqual((code, out), (0, "206"), f"curl --continue-at - was not answered with a range: {err}")
        with open(target, "rb") as handle:
            self.assertEqual(hashlib.sha256(handle.read()).hexdigest(), hashlib.sha256(replaced).hexdigest(),
                             "the resumed download differs from what was uploaded")
        head = requests.head(url, timeout=WAIT)
        self.assertEqual(head.headers.get("Content-Type"), "application/octet-stream", describe(head))
        self.assertEqual(head.headers.get("Repr-Digest"), sha256_digest_header(replaced))

    def test_ranges_and_conditions_with_requests(self):
        data = secrets.token_bytes(200_000)
        url = f"{self.base}/files/ranges.bin"
        put = requests.put(url, data=data, headers={**self.auth(self.ada), "Repr-Digest": sha256_digest_header(data)},
                           timeout=WAIT)
        self.assertEqual(put.status_code, 201, describe(put))
        etag = put.headers["ETag"]

        head = requests.head(url, timeout=WAIT)
        self.assertEqual((head.status_code, head.headers.get("Content-Length"), head.headers.get("Accept-Ranges")),
                         (200, str(len(data)), "bytes"))
        self.assertEqual(head.content, b"")
        suffix = requests.get(url, headers={"Range": "bytes=-100"}, timeout=WAIT)
        self.assertEqual(suffix.status_code, 206, describe(suffix))
        self.assertEqual(suffix.content, data[-100:])
        self.assertEqual(suffix.headers["Content-Range"], f"bytes {len(data) - 100}-{len(data) - 1}/{len(data)}")
        middle = requests.get(url, headers={"Range": "bytes=1000-1999", "If-Range": etag}, timeout=WAIT)
        self.assertEqual((middle.status_code, middle.content), (206, data[1000:2000]))
        stale = requests.get(url, headers={"Range": "bytes=1000-1999", "If-Range": '"not-this-one"'}, timeout=WAIT)
        self.assertEqual((stale.status_code, stale.content), (200, data), "a stale If-Range must send the whole file")
        several = requests.get(url, headers={"Range": "bytes=0-1,5-6"}, timeout=WAIT)
        self.assertEqual((several.status_code, len(several.content)), (200, len(data)))
        past = requests.get(url, headers={"Range": f"bytes={len(data)}-"}, timeout=WAIT)
        self.assertEqual(past.status_code, 416, describe(past))
        self.assertEqual(past.headers.get("Content-Range"), f"bytes */{len(data)}")
        unchanged = requests.get(url, headers={"If-None-Match": etag}, timeout=WAIT)
        self.assertEqual((unchanged.status_code, unchanged.content), (304, b""))

        # Replacing a file is its update rule's call; by default only the owner's. An anonymous
        # replace is told to sign in (401 with WWW-Authenticate, naming the rule), as for records.
        anonymous = requests.put(url, data=b"x", timeout=WAIT)
        self.assertEqual(anonymous.status_code, 401, describe(anonymous))
        self.assertIn("sign_in_required", anonymous.text, describe(anonymous))
        self.assertTrue(anonymous.headers.get("WWW-Authenticate", "").startswith("Bearer"), describe(anonymous))
        theirs = requests.put(url, data=b"x", headers=self.auth(self.bob), timeout=WAIT)
        self.assertEqual(theirs.status_code, 403, describe(theirs))
        self.assertEqual(requests.get(url, timeout=WAIT).content, data, "another user's PUT changed the file")

    def test_resumable_upload_protocol(self):
        data = secrets.token_bytes(600_000)
        upload = secrets.token_hex(16)
        url = f"{self.base}/files/resumed.bin?upload={upload}"
        first = requests.put(url, data=data[:250_000], headers={
            **self.auth(self.ada), "Upload-Offset": "0", "Upload-Complete": "?0"}, timeout=WAIT)
        self.assertEqual((first.status_code, first.headers.get("Upload-Offset")), (204, "250000"), describe(first))
        # The client lost the answer: ask the server where to go on.
        offset = requests.head(url, headers=self.auth(self.ada), timeout=WAIT)
        self.assertEqual(offset.headers.get("Upload-Offset"), "250000", describe(offset))
        wrong = requests.put(url, data=data[5:], headers={
            **self.auth(self.ada), "Upload-Offset": "5", "Upload-Complete": "?1"}, timeout=WAIT)
        self.assertEqual((wrong.status_code, wrong.headers.get("Upload-Offset")), (409, "250000"), describe(wrong))
        self.assertEqual(wrong.json()["error"]["code"], "upload_offset_mismatch")
        other = requests.head(url, headers=self.auth(self.bob), timeout=WAIT)
        self.assertEqual(other.status_code, 404, "another user must not see the upload")
        last = requests.put(url, data=data[250_000:], headers={
            **self.auth(self.ada), "Upload-Offset": "250000", "Upload-Complete": "?1",
            "Repr-Digest": sha256_digest_header(data)}, timeout=WAIT)
        self.assertEqual(last.status_code, 201, describe(last))
        self.assertEqual(last.json()["sha256"], hashlib.sha256(data).hexdigest())
        self.assertEqual(requests.get(f"{self.base}/files/resumed.bin", timeout=WAIT).content, data)

        bad = secrets.token_hex(16)
        bad_url = f"{self.base}/files/never.bin?upload={bad}"
        requests.put(bad_url, data=data[:1000], headers={
            **self.auth(self.ada), "Upload-Offset": "0", "Upload-Complete": "?0"}, timeout=WAIT)
        mismatch = requests.put(bad_url, data=data[1000:2000], headers={
            **self.auth(self.ada), "Upload-Offset": "1000", "Upload-Complete": "?1",
            "Repr-Digest": sha256_digest_header(b"something else")}, timeout=WAIT)
        self.assertEqual(mismatch.status_code, 422, describe(mismatch))
        self.assertEqual(mismatch.json()["error"]["code"], "checksum_mismatch")
        self.assertEqual(requests.get(f"{self.base}/files/never.bin", timeout=WAIT).status_code, 404)

    # Live changes

    def create(self, kind, body, token, private=False):
        query = "?visibility=private" if private else ""
        answer = requests.post(f"{self.base}/records/{kind}{query}", json=body, headers=self.auth(token), timeout=WAIT)
        self.assertEqual(answer.status_code, 201, describe(answer))
        return answer.json()["id"]

    def open_stream(self, kind, last_event_id=None):
        headers = {"Accept": "text/event-stream"}
        if last_event_id is not None:
            headers["Last-Event-ID"] = last_event_id
        response = requests.get(f"{self.base}/records/{kind}/changes", headers=headers, stream=True, timeout=WAIT)
        self.assertEqual(response.status_code, 200, describe(response))
        self.assertTrue(response.headers["Content-Type"].startswith("text/event-stream"))
        return SSEReader(response)

    def collect(self, kind, position, count):
        """`count` change events after `position`; a stream ends after a second, so this reconnects
        with `Last-Event-ID` as an EventSource would."""
        seen = []
        deadline = time.monotonic() + WAIT
        while len(seen) < count:
            self.assertLess(time.monotonic(), deadline, f"{len(seen)} of {count} changes arrived")
            reader = self.open_stream(kind, last_event_id=position)
            while len(seen) < count:
                event = reader.next_event()
                if event is None:
                    break
                if event["event"] in ("created", "updated", "deleted"):
                    seen.append(event)
                    position = event["id"]
            reader.close()
        return seen

    def test_a_plain_reader_resumes_with_last_event_id(self):
        kind = "livepy"
        reader = self.open_stream(kind)
        ready = reader.next_event()
        reader.close()
        self.assertEqual(ready["event"], "ready")
        first = self.create(kind, {"n": 1}, self.ada)
        [created] = self.collect(kind, ready["id"], 1)
        self.assertEqual((created["event"], json.loads(created["data"])["id"]), ("created", first))

        # While nobody listens: two creates, a patch and a delete.
        second = self.create(kind, {"n": 2}, self.ada)
        third = self.create(kind, {"n": 3}, self.ada)
        patched = requests.patch(f"{self.base}/records/{kind}/{second}", json={"n": 20},
                                 headers={**self.auth(self.ada), "Content-Type": "application/merge-patch+json"},
                                 timeout=WAIT)
        self.assertEqual(patched.status_code, 200, describe(patched))
        deleted = requests.delete(f"{self.base}/records/{kind}/{first}", headers=self.auth(self.ada), timeout=WAIT)
        self.assertEqual(deleted.status_code, 204, describe(deleted))

        seen = self.collect(kind, created["id"], 4)
        self.assertEqual([(e["event"], json.loads(e["data"])["id"]) for e in seen],
                         [("created", second), ("created", third), ("updated", second), ("deleted", first)])
        self.assertEqual(json.loads(seen[2]["data"])["record"]["n"], 20)
        ids = [int(e["id"]) for e in [created] + seen]
        self.assertEqual(ids, sorted(set(ids)), "positions must grow, without repeats")

        for bad, status, code in (("abc", 400, "invalid_position"), ("999999999999", 410, "unknown_position")):
            answer = requests.get(f"{self.base}/records/{kind}/changes", headers={"Last-Event-ID": bad},
                                  timeout=WAIT)
            self.assertEqual(answer.status_code, status, describe(answer))
            self.assertEqual(answer.json()["error"]["code"], code)

    # User files never run as the server's origin

    PAYLOADS = {
        "evil.html": ("text/html", "<!doctype html><title>x</title><script>MARK('html')</script><p>html</p>"),
        "evil.svg": ("image/svg+xml", '<svg xmlns="http://www.w3.org/2000/svg"><script>MARK("svg")</script></svg>'),
        "evil.xhtml": ("application/xhtml+xml",
                       '<html xmlns="http://www.w3.org/1999/xhtml"><body><script>MARK("xhtml")</script></body></html>'),
        "evil-text.txt": ("text/plain", "<!doctype html><script>MARK('text')</script>"),
        "evil-image.png": ("image/png", "<!doctype html><script>MARK('image')</script>"),
    }
    # What a script that ran would leave on the origin it ran as: a cookie and a localStorage entry.
    MARK = ("function MARK(n){document.cookie='pwned_'+n+'=1; path=/';"
            "try{localStorage.setItem('pwned_'+n,'1')}catch(e){}}")

    def marks(self, driver):
        """The marks a script left on the server's origin: cookie names and localStorage keys."""
        driver.get(self.base + "/health")
        cookies = sorted(c["name"] for c in driver.get_cookies() if c["name"].startswith("pwned_"))
        stored = driver.execute_script(
            "return Object.keys(localStorage).filter(k => k.startsWith('pwned_')).sort();")
        return cookies, stored

    def test_chromium_runs_no_script_of_an_uploaded_file_as_the_server(self):
        if type(self).driver is None:
            type(self).driver = new_driver()
        driver = self.driver
        for name, (content_type, body) in self.PAYLOADS.items():
            page = body.replace("<script>", "<script>" + self.MARK + ";", 1)
            answer = requests.put(f"{self.base}/files/{name}", data=page.encode(),
                                  headers={**self.auth(self.ada), "Content-Type": content_type}, timeout=WAIT)
            self.assertIn(answer.status_code, (200, 201), describe(answer))
        self.assertEqual(self.marks(driver), ([], []), "marks before the test")

        # The payload is live: the same page in a frame of the server's own origin (srcdoc) runs and
        # leaves both marks, so this test sees a script that runs.
        driver.execute_async_script("""
            const done = arguments[arguments.length - 1];
            const frame = document.createElement('iframe');
            frame.onload = () => done();
            frame.srcdoc = arguments[0];
            document.body.appendChild(frame);
        """, self.PAYLOADS["evil.html"][1].replace("<script>", "<script>" + self.MARK.replace("pwned_", "pwned_control_") + ";", 1))
        cookies, stored = self.marks(driver)
        self.assertEqual((cookies, stored), (["pwned_control_html"], ["pwned_control_html"]),
                         "the control page did not run: this test could not see a script that ran")
        driver.delete_all_cookies()
        driver.execute_script("localStorage.clear();")

        for name in self.PAYLOADS:
            url = f"{self.base}/files/{name}"
            driver.get(url)  # the top level: an attachment is saved, a displayed type shows as what it says
            driver.get(self.base + "/health")
            for element in ("iframe", "object", "embed"):  # in the server's own page
                driver.execute_async_script("""
                    const [tag, url, done] = arguments;
                    const node = document.createElement(tag);
                    node[tag === 'object' ? 'data' : 'src'] = url;
                    let finished = false;
                    const finish = () => { if (!finished) { finished = true; done(); } };
                    node.onload = finish;
                    node.onerror = finish;
                    setTimeout(finish, 3000);  // a saved attachment fires no load event in some elements
                    document.body.appendChild(node);
                """, element, url)
            self.assertEqual(self.marks(driver), ([], []), f"{name} ran a script as the server's origin")
            headers = requests.head(url, timeout=WAIT).headers
            self.assertEqual(headers.get("X-Content-Type-Options"), "nosniff")

    def test_chromium_eventsource_follows_changes_across_reconnects(self):
        kind = "livebrowser"
        type(self).driver = driver = new_driver()
        driver.get(self.base + "/health")  # any page of the server's origin: the feed is same-origin
        driver.execute_script("""
            window.feed = {opens: 0, ready: 0, events: [], errors: 0};
            const source = new EventSource('/records/%s/changes');
            source.onopen = () => { window.feed.opens += 1; };
            source.onerror = () => { window.feed.errors += 1; };
            source.addEventListener('ready', () => { window.feed.ready += 1; });
            for (const name of ['created', 'updated', 'deleted']) {
                source.addEventListener(name, (event) => {
                    window.feed.events.push({type: name, position: event.lastEventId,
                                             id: JSON.parse(event.data).id});
                });
            }
            window.feedSource = source;
        """ % kind)

        def feed():
            return driver.execute_script("return window.feed;")

        deadline = time.monotonic() + WAIT
        while feed()["ready"] < 1:  # the browser's stream is open (polled, bounded)
            self.assertLess(time.monotonic(), deadline, "EventSource never opened the feed")
        public, private = [], []
        # Write until the browser has reconnected at least three times while the writes went on.
        while feed()["opens"] < 4 or len(public) < 10:
            self.assertLess(time.monotonic(), deadline + WAIT, f"only {feed()['opens']} EventSource opens")
            public.append(self.create(kind, {"n": len(public)}, self.ada))
            if len(public) % 5 == 0:
                private.append(self.create(kind, {"secret": True}, self.bob, private=True))
        deadline = time.monotonic() + WAIT
        while len(feed()["events"]) < len(public):
            self.assertLess(time.monotonic(), deadline, f"the browser saw {len(feed()['events'])} of {len(public)}")
        driver.execute_script("window.feedSource.close();")
        events = feed()["events"]
        self.assertEqual([e["id"] for e in events], public, "every public change once, in order")
        self.assertTrue(all(e["type"] == "created" for e in events))
        positions = [int(e["position"]) for e in events]
        self.assertEqual(positions, sorted(set(positions)), "positions grow, no repeats across reconnects")
        self.assertFalse(set(private) & {e["id"] for e in events}, "another user's private record reached the browser")
        self.assertGreaterEqual(feed()["opens"], 4, "the browser did not reconnect")


class SeparateFilesOrigin(harness.Suite):
    """`outpost serve --files-url`: downloads leave the server's origin for the files origin."""

    token = FilesAndChanges.__dict__["token"]  # the password grant, on this class's server
    driver = None
    quit_driver = FilesAndChanges.__dict__["quit_driver"]

    @classmethod
    def start(cls):
        cls.keep(None, cls.quit_driver)
        cls.server = cls.keep(harness.OutpostServer())
        cls.server.add_user("ada")
        cls.client_id, _ = cls.server.add_client("Files origin", grants=["password"])
        # The files origin is `localhost` on the server's own port: another host name for the same
        # server. The port is chosen first, so that the files URL can name it.
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        cls.files_origin = f"http://localhost:{port}"
        cls.server.start(extra_args=["--port", str(port), "--files-url", cls.files_origin])
        cls.base = cls.server.url

    def test_chromium_follows_the_redirect_to_a_signed_link_and_the_files_origin_serves_nothing_else(self):
        token = self.token("ada")
        body = "plain words <b>not bold</b>"
        answer = requests.put(f"{self.base}/files/note.txt", data=body.encode(),
                              headers={"Authorization": f"Bearer {token}", "Content-Type": "text/plain"}, timeout=WAIT)
        self.assertEqual(answer.status_code, 201, describe(answer))
        type(self).driver = driver = new_driver()
        driver.get(f"{self.base}/files/note.txt")
        self.assertTrue(driver.current_url.startswith(f"{self.files_origin}/files/note.txt?expires="), driver.current_url)
        self.assertIn("signature=", driver.current_url)
        self.assertEqual(driver.find_element("tag name", "body").text, body)
        for path in ("/health", "/device", "/files/note.txt"):
            answer = requests.get(self.files_origin + path, timeout=WAIT, allow_redirects=False)
            self.assertEqual(answer.status_code, 404, f"{path} on the files origin: {describe(answer)}")


if __name__ == "__main__":
    harness.run_suite("files and live changes interop", globals())
