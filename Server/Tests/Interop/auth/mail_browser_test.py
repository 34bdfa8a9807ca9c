"""Password reset and e-mail verification of `outpost serve --smtp`, driven in headless Chromium with
selenium through the real pages, with the messages delivered to a real SMTP server (aiosmtpd, the
Interop/mail/smtp_sink.py helper) on loopback: "Forgot password?" on the sign-in page, the form, the
mailed link, the new password, signing in with it; a spent link refused; an address confirmed from
its mailed link (the link's page spends nothing, its button does).

Every page is photographed at 375 px and 1280 px into $OUTPOST_SCREENSHOTS (names start with mail-).

Run: OUTPOST_BINARY=Server/.build/debug/outpost .build-venv/bin/python Server/Tests/Interop/auth/mail_browser_test.py
"""

import glob
import json
import os
import re
import secrets
import subprocess
import sys
import tempfile
import time
import urllib.parse

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import requests  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402

import harness  # noqa: E402
import browser_test  # noqa: E402
from browser_test import SCREENSHOTS  # noqa: E402
from harness import PASSWORD, FormBrowser, LoopbackSite, describe, pkce_pair  # noqa: E402

SINK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mail", "smtp_sink.py")
NEW_PASSWORD = "a new interop passphrase"


class SMTPSink:
    """smtp_sink.py in a child process; messages land in a temporary folder."""

    def __init__(self):
        self.folder = tempfile.mkdtemp(prefix="outpost-mail-")
        self.process = subprocess.Popen([sys.executable, SINK, self.folder], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.port = json.loads(self.process.stdout.readline())["port"]

    def messages(self):
        names = sorted(glob.glob(os.path.join(self.folder, "*.json")))
        result = []
        for name in names:
            with open(name) as handle:
                result.append(json.load(handle))
        return result

    def wait_for(self, count, timeout=20.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.messages()
            if len(found) >= count:
                return found
            time.sleep(0.05)  # polling the sink's folder, bounded by the timeout
        raise AssertionError(f"{count} message(s) did not arrive within {timeout:.0f} s")

    def stop(self):
        self.process.stdin.close()
        self.process.wait(timeout=15)


def link_in(message):
    match = re.search(r"https?://\S+", message["text"])
    if not match:
        raise AssertionError("no link in the message")
    return match.group(0)


class MailPages(browser_test.BrowserSuite):
    """The sign-in suite's page helpers, on a server with mail."""

    shoot = browser_test.SignInPages.shoot
    text = browser_test.SignInPages.text
    fill = browser_test.SignInPages.fill
    wait_for_new_document = browser_test.SignInPages.wait_for_new_document
    authorize_url = browser_test.SignInPages.authorize_url

    @classmethod
    def start(cls):
        os.makedirs(SCREENSHOTS, exist_ok=True)
        for old in glob.glob(os.path.join(SCREENSHOTS, "mail-*.png")):
            os.remove(old)
        cls.sink = cls.keep(SMTPSink())
        cls.server = cls.keep(harness.OutpostServer())
        for name in ("ada", "bob"):
            cls.server.cli("users", "add", name, "--email", f"{name}@example.com", "--email-verified",
                           stdin=PASSWORD + "\n")
        cls.server.add_user("cleo")
        cls.client_id, _ = cls.server.add_client(
            "Interop Mail App", redirect_uris=["http://127.0.0.1/callback"],
            grants=["authorization_code", "refresh_token"])
        cls.server.start(["--smtp", f"smtp://127.0.0.1:{cls.sink.port}",
                          "--mail-from", "Outpost <no-reply@outpost.test>"])
        cls.base = cls.server.url
        cls.app = cls.keep(LoopbackSite())
        cls.attacker = cls.keep(LoopbackSite())
        cls.redirect_uri = cls.app.origin + "/callback"
        cls.start_browser()

    def click(self, element_id):
        marker = secrets.token_hex(8)
        self.driver.execute_script("window.outpostTestMarker = arguments[0]", marker)
        self.driver.find_element(By.ID, element_id).click()
        self.wait_for_new_document(marker)

    def open(self, url):
        marker = secrets.token_hex(8)
        self.driver.execute_script("window.outpostTestMarker = arguments[0]", marker)
        self.driver.get(url)
        self.wait_for_new_document(marker)

    def test_password_reset(self):
        verifier, challenge = pkce_pair()
        self.open(self.authorize_url("s1", challenge))
        self.assertIn("Forgot password?", self.text())
        self.shoot("mail-sign-in")
        self.click("forgot-password")
        self.assertIn("Forgot your password?", self.text())
        self.shoot("mail-forgot")
        self.fill("identifier", "ada@example.com")
        before = len(self.sink.messages())
        self.click("send")
        self.assertIn("a message with a link is on its way", self.text())
        self.shoot("mail-forgot-sent")

        message = self.sink.wait_for(before + 1)[before]
        self.assertEqual(message["rcpt_tos"], ["ada@example.com"])
        link = link_in(message)
        self.assertTrue(link.startswith(self.base + "/password/reset?token="), "the link leads to this server")
        self.open(link)
        self.shoot("mail-reset")
        self.fill("password", NEW_PASSWORD)
        self.fill("confirm", NEW_PASSWORD)
        self.click("save")
        self.assertIn("Your password is changed", self.text())
        self.shoot("mail-reset-done")

        self.open(link)
        self.assertIn("This link was used already", self.text())
        self.shoot("mail-reset-spent")

        # The new password signs in and allows: back at the app with a code.
        self.open(self.authorize_url("s2", challenge))
        self.fill("username", "ada")
        self.fill("password", NEW_PASSWORD)
        before = len(self.app.hits)
        self.driver.find_element(By.ID, "allow").click()
        query = self.app.wait_for_hit(after=before)
        self.assertIsNotNone(query, "the browser did not return to the app")
        self.assertIn("code", query, "the new password signed in")
        self.assertEqual(query.get("state"), "s2")

    def test_unknown_account_same_page(self):
        texts = []
        for identifier in ("nobody@example.com", "cleo"):
            self.open(self.base + "/password/forgot")
            self.fill("identifier", identifier)
            self.click("send")
            texts.append(self.text())
        self.assertEqual(texts[0], texts[1])
        self.shoot("mail-forgot-unknown")

    def test_email_verification(self):
        # A token for bob through the code flow, posted as a browser would.
        browser = FormBrowser(self.base)
        verifier, challenge = pkce_pair()
        page = browser.get(self.base + "/oauth/authorize?" + urllib.parse.urlencode({
            "response_type": "code", "client_id": self.client_id, "redirect_uri": "http://127.0.0.1/callback",
            "scope": "profile", "code_challenge": challenge, "code_challenge_method": "S256"}))
        answer = browser.submit(page, {"username": "bob", "password": PASSWORD})
        code = urllib.parse.parse_qs(urllib.parse.urlparse(answer.headers["Location"]).query)["code"][0]
        tokens = requests.post(self.base + "/oauth/token", data={
            "grant_type": "authorization_code", "code": code, "redirect_uri": "http://127.0.0.1/callback",
            "client_id": self.client_id, "code_verifier": verifier}, timeout=30).json()
        before = len(self.sink.messages())
        changed = requests.patch(self.base + "/me", json={"email": "bob.new@example.com"},
                                 headers={"Authorization": "Bearer " + tokens["access_token"]}, timeout=30)
        self.assertEqual(changed.status_code, 200, describe(changed))
        self.assertEqual(changed.json(), {"email": "bob.new@example.com", "email_verified": False})

        message = self.sink.wait_for(before + 1)[before]
        self.assertEqual(message["rcpt_tos"], ["bob.new@example.com"])
        link = link_in(message)
        self.open(link)
        self.assertIn("bob.new@example.com", self.text())
        self.shoot("mail-verify")
        self.click("confirm")
        self.assertIn("Your e-mail address is confirmed", self.text())
        self.shoot("mail-verified")
        self.open(link)
        self.assertIn("This link was used already", self.text())


if __name__ == "__main__":
    harness.run_suite("mail browser interop", globals(),
                      epilogue=f"screenshots (375 px and 1280 px): {SCREENSHOTS}/index.html")
