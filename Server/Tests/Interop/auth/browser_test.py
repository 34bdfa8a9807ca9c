"""The sign-in pages of `outpost serve`, driven in headless Chromium with selenium as a person
would: sign in, a wrong password, allow (back to a loopback redirect URI, then the code exchange),
deny with empty fields, device code entry and approval, and forms posted from another origin
(consent, login and device approval CSRF) being refused.

Every page is photographed at 375 px and 1280 px into $OUTPOST_SCREENSHOTS (default
.build-screenshots/), so a person can look at them.

Run: OUTPOST_BINARY=Server/.build/debug/outpost .build-venv/bin/python Server/Tests/Interop/auth/browser_test.py
"""

import glob
import html
import json
import os
import secrets
import sys
import unittest
import urllib.parse

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import requests  # noqa: E402
from selenium import webdriver  # noqa: E402
from selenium.common.exceptions import TimeoutException, WebDriverException  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

import harness  # noqa: E402
from harness import DEVICE_GRANT, PASSWORD, LoopbackSite, describe, parse_page, pkce_pair, redact  # noqa: E402

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")
SCREENSHOTS = os.path.abspath(os.environ.get("OUTPOST_SCREENSHOTS", os.path.join(harness.REPO, ".build-screenshots")))
WAIT = 15.0
CLIENT_NAME = "Interop Browser App"
WIDTHS = ((375, True), (1280, False))


def new_driver():
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--window-size=1280,900", "--no-first-run", "--disable-extensions", "--lang=en-US"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})  # the headers Chromium really sends
    driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    driver.set_page_load_timeout(WAIT * 2)
    return driver


def write_index():
    """index.html beside the screenshots: every page at both widths, side by side."""
    names = sorted({os.path.basename(path).rsplit("-", 1)[0] for path in glob.glob(os.path.join(SCREENSHOTS, "*.png"))})
    rows = "".join(
        f"<h2>{html.escape(name)}</h2><div style='display:flex;gap:1rem;align-items:flex-start'>"
        + "".join(f"<img src='{html.escape(name)}-{width}.png' alt='{html.escape(name)} at {width} px' "
                  "style='border:1px solid #999;max-width:100%'>" for width, _ in WIDTHS)
        + "</div>" for name in names)
    with open(os.path.join(SCREENSHOTS, "index.html"), "w") as index:
        index.write("<!doctype html><html lang=en><meta charset=utf-8><title>Outpost sign-in pages</title>"
                    f"<body style='font:16px system-ui;margin:1rem'><h1>Outpost sign-in pages</h1>{rows}</body></html>")


class BrowserSuite(harness.Suite):
    """A suite with one headless Chromium, its cookies cleared before each test; the screenshots'
    index is written again when the suite stops."""

    @classmethod
    def start_browser(cls):
        os.makedirs(SCREENSHOTS, exist_ok=True)
        cls.keep(None, write_index)
        cls.driver = cls.keep(new_driver())

    def setUp(self):
        self.driver.execute_cdp_cmd("Network.clearBrowserCookies", {})
        self.driver.get("about:blank")

    def wait_for_new_document(self, marker):
        """Waits until the window holds a new, fully loaded document (the marked one is gone)."""
        def loaded(driver):
            try:
                return driver.execute_script(
                    "return window.outpostTestMarker !== arguments[0] && document.readyState === 'complete'", marker)
            except WebDriverException:  # between two documents
                return False
        WebDriverWait(self.driver, WAIT).until(loaded, "the page did not navigate after the click")


class SignInPages(BrowserSuite):
    @classmethod
    def start(cls):
        os.makedirs(SCREENSHOTS, exist_ok=True)
        for old in glob.glob(os.path.join(SCREENSHOTS, "*.png")) + glob.glob(os.path.join(SCREENSHOTS, "index.html")):
            os.remove(old)
        cls.server = cls.keep(harness.OutpostServer())
        for name in ("ada", "bob", "cleo", "dan", "eve", "fay", "victim", "mallory"):
            cls.server.add_user(name)
        cls.client_id, _ = cls.server.add_client(
            CLIENT_NAME, redirect_uris=["http://127.0.0.1/callback"],
            grants=["authorization_code", "refresh_token", "device_code"])
        cls.server.start()
        cls.base = cls.server.url
        cls.app = cls.keep(LoopbackSite())  # the app's loopback redirect URI (RFC 8252: any port matches)
        cls.attacker = cls.keep(LoopbackSite())  # another origin: 127.0.0.1 on another port
        cls.redirect_uri = cls.app.origin + "/callback"
        cls.start_browser()

    # Helpers.

    def authorize_url(self, state, challenge, scope="records:read profile"):
        return self.base + "/oauth/authorize?" + urllib.parse.urlencode({
            "response_type": "code", "client_id": self.client_id, "redirect_uri": self.redirect_uri, "scope": scope,
            "state": state, "code_challenge": challenge, "code_challenge_method": "S256"},
            quote_via=urllib.parse.quote)  # spaces as %20 here; the Authlib suite sends them as "+"

    def shoot(self, name):
        """Full-page screenshots at a phone's and a desktop's width; at 375 px the page must not scroll sideways."""
        driver = self.driver
        for width, mobile in WIDTHS:
            metrics = {"width": width, "height": 800, "deviceScaleFactor": 1, "mobile": mobile}
            driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
            height = driver.execute_script("return document.documentElement.scrollHeight")
            overflow = driver.execute_script("return document.documentElement.scrollWidth")
            metrics["height"] = max(600, min(int(height), 4000))
            driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
            driver.save_screenshot(os.path.join(SCREENSHOTS, f"{name}-{width}.png"))
            self.assertLessEqual(overflow, width, f"{name}: the page is wider than {width} px ({overflow} px)")
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})

    def text(self):
        return " ".join(self.driver.find_element(By.TAG_NAME, "body").text.split())

    def fill(self, field_id, value):
        fields = self.driver.find_elements(By.ID, field_id)
        if fields and fields[0].is_displayed():
            fields[0].clear()
            fields[0].send_keys(value)
            return True
        return False

    def decision_button(self, decision):
        """The button with that value; for "allow", a first step's "continue" when there is no Allow yet."""
        wanted = (decision, "continue") if decision == "allow" else (decision,)
        for value in wanted:
            buttons = self.driver.find_elements(
                By.CSS_SELECTOR, f"button[value='{value}'], input[type=submit][value='{value}']")
            if buttons:
                return buttons[0]
        return None

    def press(self, decision, expect_navigation=True):
        button = self.decision_button(decision)
        self.assertIsNotNone(button, f"no {decision} button on the page: {redact(self.text()[:300])}")
        marker = secrets.token_hex(8)
        self.driver.execute_script("window.outpostTestMarker = arguments[0]", marker)
        button.click()
        if expect_navigation:
            self.wait_for_new_document(marker)

    def alerts(self):
        return [element.text.strip() for element in self.driver.find_elements(By.CSS_SELECTOR, "[role=alert]")
                if element.text.strip()]

    def sign_in_and_allow(self, username, state=None, scope="records:read profile"):
        """Opens the sign-in page, signs in and allows; returns (the redirect's query, verifier, state)."""
        verifier, challenge = pkce_pair()
        state = state or secrets.token_urlsafe(12)
        before = len(self.app.hits)
        self.driver.get(self.authorize_url(state, challenge, scope))
        self.fill("username", username)
        self.fill("password", PASSWORD)
        self.press("allow")
        for _ in range(2):  # a separate consent step, if the server has one
            if self.driver.current_url.startswith(self.app.origin) or not self.decision_button("allow"):
                break
            self.assertEqual(self.alerts(), [], "signing in failed")
            self.press("allow")
        self.assertTrue(self.driver.current_url.startswith(self.app.origin),
                        f"the redirect URI was never reached; the browser shows: {redact(self.text()[:300])}")
        answer = self.app.wait_for_hit(timeout=WAIT, after=before)
        self.assertIsNotNone(answer, "the browser shows the redirect URI's page, but the listener has no request")
        return answer, verifier, state

    def exchange(self, code, verifier):
        return requests.post(self.base + "/oauth/token", data={
            "grant_type": "authorization_code", "code": code, "redirect_uri": self.redirect_uri,
            "client_id": self.client_id, "code_verifier": verifier}, timeout=30)

    def me(self, access_token):
        return requests.get(self.base + "/me", headers={"Authorization": f"Bearer {access_token}"}, timeout=30)

    def start_device(self):
        response = requests.post(self.base + "/oauth/device_authorization",
                                 data={"client_id": self.client_id, "scope": "records:read profile"}, timeout=30)
        self.assertEqual(response.status_code, 200, describe(response))
        return response.json()

    def poll_device(self, device_code):
        return requests.post(self.base + "/oauth/token", data={
            "grant_type": DEVICE_GRANT, "device_code": device_code, "client_id": self.client_id}, timeout=30)

    def approve_device(self, grant, username, shots=None):
        """Types the code on /device, signs in and allows (confirming on a second page if there is
        one). Returns the page texts seen before the final page."""
        self.driver.get(grant["verification_uri"])
        seen = [self.text()]
        if shots:
            self.shoot(shots[0])
        self.assertTrue(self.fill("user_code", grant["user_code"]), "no user_code field on the device page")
        self.fill("username", username)
        self.fill("password", PASSWORD)
        self.press("allow")
        for step in range(2):  # a confirmation page naming the client, if the server has one
            if not self.decision_button("allow"):
                break
            self.assertEqual(self.alerts(), [], "the device page refused the code or the sign-in")
            seen.append(self.text())
            if shots:
                self.shoot(f"{shots[1]}-{step + 1}")
            self.fill("user_code", grant["user_code"])
            self.press("allow")
        return seen

    def auto_post_page(self, action, fields):
        inputs = "\n".join(f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}">'
                           for k, v in fields.items())
        return ("<!doctype html><html lang=en><meta charset=utf-8><title>You won a prize</title>"
                f'<body><h1>Loading your prize…</h1><form method="post" action="{html.escape(action)}">{inputs}</form>'
                "<script>document.forms[0].submit()</script></body></html>")

    def visit_attacker(self, path, page):
        """Serves `page` on the attacker's origin, opens it, and waits until its form post has been answered."""
        self.attacker.set_page(path, page)
        self.driver.get(self.attacker.origin + path)
        def answered(driver):
            try:
                return (not driver.current_url.startswith(self.attacker.origin)
                        and driver.execute_script("return document.readyState") == "complete")
            except WebDriverException:  # between two documents
                return False
        try:
            WebDriverWait(self.driver, WAIT).until(answered)
        except TimeoutException:
            self.fail("the attacker's auto-posting form never navigated")

    def harvest(self, url):
        """What an attacker gets by loading a form themselves (their own cookies): its hidden fields."""
        response = requests.get(url, timeout=30)
        self.assertEqual(response.status_code, 200, describe(response))
        forms = [form for form in parse_page(response.text).forms if form["method"] == "post"]
        self.assertTrue(forms, "no form to harvest")
        return forms[0]["fields"]

    def posts_sent(self):
        """The POSTs the browser sent since the last call: (url, request headers, response status)."""
        requests_seen, headers, statuses = {}, {}, {}
        for entry in self.driver.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            method, params = message.get("method"), message.get("params", {})
            if method == "Network.requestWillBeSent" and params["request"]["method"] == "POST":
                requests_seen[params["requestId"]] = params["request"]["url"]
            elif method == "Network.requestWillBeSentExtraInfo":
                headers[params["requestId"]] = {k.lower(): v for k, v in params.get("headers", {}).items()}
            elif method == "Network.responseReceivedExtraInfo":
                statuses[params["requestId"]] = params.get("statusCode")
            elif method == "Network.requestWillBeSent" and params.get("redirectResponse"):
                statuses.setdefault(params["requestId"], params["redirectResponse"]["status"])
        return [(url, headers.get(rid, {}), statuses.get(rid)) for rid, url in requests_seen.items()]

    # Tests.

    def test_00_own_form_post_accepted(self):
        """The sign-in page's own form, posted by Chromium, reaches the sign-in check: the server
        accepts the Origin and Sec-Fetch-Site this browser really sends for it."""
        _, challenge = pkce_pair()
        self.driver.get(self.authorize_url("own-post", challenge))
        self.posts_sent()
        self.fill("username", "ada")
        self.fill("password", "not-the-password")
        self.press("allow")
        posts = [post for post in self.posts_sent() if post[0].startswith(self.base + "/oauth/authorize")]
        self.assertEqual(len(posts), 1, "the browser did not post the form once")
        _, sent, status = posts[0]
        self.assertNotEqual(
            status, 403, f"the server refused its own page's post as cross-origin; Chromium sent Origin: "
            f"{sent.get('origin')!r}, Sec-Fetch-Site: {sent.get('sec-fetch-site')!r} (page served with "
            f"Referrer-Policy: {requests.get(self.authorize_url('p', challenge), timeout=30).headers.get('Referrer-Policy')!r})")
        self.assertEqual(sent.get("sec-fetch-site"), "same-origin")


    def test_01_sign_in_page(self):
        """The sign-in page names the client and the scopes, with labelled fields and Allow/Deny."""
        _, challenge = pkce_pair()
        self.driver.get(self.authorize_url("page-state", challenge))
        self.shoot("01-sign-in")
        body = self.text()
        self.assertIn(CLIENT_NAME, body)
        # Scopes are listed, by name or in words with the name in data-scope.
        listed = {element.get_attribute("data-scope") or element.text.strip()
                  for element in self.driver.find_elements(By.CSS_SELECTOR, "li")}
        self.assertLessEqual({"records:read", "profile"}, listed, "the page does not list the scopes asked for")
        self.assertEqual(len(self.driver.find_elements(By.TAG_NAME, "h1")), 1)
        for field in ("username", "password"):
            self.assertTrue(self.driver.find_elements(By.CSS_SELECTOR, f"label[for='{field}']"), f"{field} has no label")
            self.assertTrue(self.driver.find_element(By.ID, field).is_displayed())
        self.assertEqual(self.driver.find_element(By.ID, "password").get_attribute("type"), "password")
        self.assertIsNotNone(self.decision_button("allow"))
        self.assertIsNotNone(self.decision_button("deny"))

    def test_02_wrong_password_shows_alert(self):
        """A wrong password keeps the person on the page with an error in role=alert, and no code is sent."""
        before = len(self.app.hits)
        _, challenge = pkce_pair()
        self.driver.get(self.authorize_url("wrong-state", challenge))
        self.fill("username", "ada")
        self.fill("password", "not-the-password")
        self.press("allow")
        alerts = self.alerts()
        self.shoot("02-wrong-password")
        self.assertTrue(alerts, "no role=alert message after a wrong password")
        self.assertTrue(self.driver.find_elements(By.ID, "password"),
                        f"the sign-in form is gone; the browser shows: {redact(self.text()[:300])}")
        self.assertFalse(self.driver.current_url.startswith(self.app.origin))
        self.assertEqual(len(self.app.hits), before, "the redirect URI was called after a wrong password")
        self.assertEqual(self.driver.find_element(By.ID, "password").get_attribute("value"), "",
                         "the wrong password was sent back into the page")

    def test_03_allow_reaches_redirect_uri_and_exchanges(self):
        """Allow: the loopback redirect URI gets the code and the same state; the code exchanges for
        tokens of the right user; a second visit uses the browser session."""
        answer, verifier, state = self.sign_in_and_allow("bob")
        self.assertEqual(answer.get("state"), state)
        self.assertNotIn("error", answer, redact(answer))
        self.assertTrue(answer.get("code"), "no code on the redirect")
        WebDriverWait(self.driver, WAIT).until(lambda d: d.current_url.startswith(self.app.origin))
        self.shoot("03-back-in-app")
        tokens = self.exchange(answer["code"], verifier)
        self.assertEqual(tokens.status_code, 200, describe(tokens))
        me = self.me(tokens.json()["access_token"])
        self.assertEqual(me.status_code, 200, describe(me))
        self.assertEqual(me.json()["username"], "bob")
        self.assertEqual(self.exchange(answer["code"], verifier).status_code, 400, "a code worked twice")

        verifier, challenge = pkce_pair()
        self.driver.get(self.authorize_url("second-visit", challenge))
        self.shoot("04-consent-signed-in")
        self.assertIn("bob", self.text())
        self.assertFalse([field for field in self.driver.find_elements(By.ID, "password") if field.is_displayed()],
                         "signed in, yet asked for the password again")
        before = len(self.app.hits)
        self.press("allow")
        second = self.app.wait_for_hit(timeout=WAIT, after=before)
        self.assertIsNotNone(second)
        self.assertEqual(second.get("state"), "second-visit")
        self.assertEqual(self.exchange(second["code"], verifier).status_code, 200)

    def test_04_authorization_response_names_issuer(self):
        """The redirect carries `iss` equal to the metadata's issuer (RFC 9207, mix-up defence)."""
        issuer = requests.get(self.base + "/.well-known/oauth-authorization-server", timeout=30).json()["issuer"]
        answer, _, _ = self.sign_in_and_allow("cleo")
        self.assertEqual(answer.get("iss"), issuer, "the authorization response has no (or the wrong) iss")

    def test_05_deny_with_empty_fields(self):
        """Deny works without typing anything: access_denied with the state reaches the redirect URI."""
        before = len(self.app.hits)
        _, challenge = pkce_pair()
        self.driver.get(self.authorize_url("deny-state", challenge))
        self.press("deny", expect_navigation=False)
        answer = self.app.wait_for_hit(timeout=WAIT, after=before)
        self.shoot("05-after-deny")
        self.assertIsNotNone(answer, "pressing Deny with empty fields did not reach the redirect URI (a required-field "
                                     f"check blocks it?); the browser shows: {redact(self.text()[:300])}")
        self.assertEqual(answer.get("error"), "access_denied")
        self.assertEqual(answer.get("state"), "deny-state")
        self.assertNotIn("code", answer)

    def test_06_device_code_entry_and_approval(self):
        """The device flow started over HTTP; a person types the code on /device, signs in and allows; the device gets tokens."""
        grant = self.start_device()
        pending = self.poll_device(grant["device_code"])
        self.assertEqual(pending.json().get("error"), "authorization_pending", describe(pending))
        self.approve_device(grant, "dan", shots=("06-device-code-entry", "06-device-confirm"))
        self.assertEqual(self.alerts(), [], "the device page shows an error")
        self.shoot("06-device-connected")
        tokens = self.poll_device(grant["device_code"])
        self.assertEqual(tokens.status_code, 200, describe(tokens))
        me = self.me(tokens.json()["access_token"])
        self.assertEqual(me.json().get("username"), "dan", describe(me))

    def test_07_device_approval_names_the_client(self):
        """Before a device is allowed, the page names the client that asks (so a person can spot a phishing code)."""
        grant = self.start_device()
        seen = self.approve_device(grant, "eve")
        named = [index for index, text in enumerate(seen) if CLIENT_NAME in text]
        self.assertTrue(named, "no page before the approval named the client")
        self.assertEqual(self.poll_device(grant["device_code"]).status_code, 200)

    def test_08_device_wrong_code_shows_alert(self):
        """A code that does not exist is refused on the page with role=alert."""
        self.driver.get(self.base + "/device")
        self.fill("user_code", "ZZZZ-ZZZZ")
        self.fill("username", "fay")
        self.fill("password", PASSWORD)
        self.press("allow")
        self.shoot("08-device-wrong-code")
        self.assertTrue(self.alerts(), "no role=alert message for an unknown code")
        self.assertTrue([field for field in self.driver.find_elements(By.ID, "user_code") if field.is_displayed()],
                        f"the code cannot be typed again; the browser shows: {redact(self.text()[:300])}")

    def test_09_cross_origin_consent_refused(self):
        """A signed-in person visits another site that auto-posts the consent form (with a form token
        the attacker fetched): the server must not issue a code."""
        self.sign_in_and_allow("victim", state="victim-own")
        _, challenge = pkce_pair()
        fields = self.harvest(self.authorize_url("csrf-consent", challenge))
        fields["decision"] = "allow"
        before = len(self.app.hits)
        self.visit_attacker("/consent", self.auto_post_page(self.base + "/oauth/authorize", fields))
        self.shoot("09-cross-origin-consent-refused")
        answers = [dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(hit).query)) for hit in self.app.hits[before:]]
        self.assertFalse([answer for answer in answers if "code" in answer],
                         "a consent form posted from another origin produced an authorization code")

    def test_10_login_csrf_refused(self):
        """Another site auto-posts the sign-in form with the attacker's own account: the browser
        must not end up signed in as the attacker, and no code is issued."""
        _, challenge = pkce_pair()
        fields = self.harvest(self.authorize_url("csrf-login", challenge))
        fields.update({"username": "mallory", "password": PASSWORD, "decision": "allow"})
        before = len(self.app.hits)
        self.visit_attacker("/login", self.auto_post_page(self.base + "/oauth/authorize", fields))
        self.shoot("10-login-csrf-refused")
        answers = [dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(hit).query)) for hit in self.app.hits[before:]]
        self.assertFalse([answer for answer in answers if "code" in answer], "a cross-origin sign-in produced a code")
        self.driver.get(self.authorize_url("after-csrf", challenge))
        self.assertNotIn("mallory", self.text(), "the browser is signed in as the attacker after a cross-origin post")
        self.assertTrue(self.driver.find_elements(By.ID, "password"), "the browser has a session after a cross-origin post")

    def test_11_cross_origin_device_approval_refused(self):
        """Another site auto-posts the device form with the attacker's code to a signed-in person's
        browser: the attacker's device must not get tokens for that person."""
        self.sign_in_and_allow("victim", state="victim-own-2")
        grant = self.start_device()
        fields = self.harvest(self.base + "/device")
        fields.update({"user_code": grant["user_code"], "decision": "allow"})
        self.visit_attacker("/device", self.auto_post_page(self.base + "/device", fields))
        self.shoot("11-cross-origin-device-refused")
        poll = self.poll_device(grant["device_code"])
        self.assertNotIn("access_token", poll.json(), "a device form posted from another origin approved a device")
        self.assertIn(poll.json().get("error"), ("authorization_pending", "slow_down", "access_denied"), describe(poll))


if __name__ == "__main__":
    harness.run_suite("browser interop", globals(), epilogue=f"screenshots (375 px and 1280 px): {SCREENSHOTS}/index.html")
