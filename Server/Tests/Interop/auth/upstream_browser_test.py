"""The web sign-in through an upstream OpenID Connect provider, end to end in headless Chromium:
a stock django-oauth-toolkit (Server/Tests/Interop/drf, OpenID Connect on) is the provider, a real
`outpost serve` its relying party. Outpost's sign-in page -> "Continue with dot" -> DOT's login page
(filled in) -> DOT's consent page -> back to Outpost -> the app's loopback redirect URI gets
Outpost's code and exchanges it for Outpost's tokens. Also: the device flow through the same button,
and a replayed provider answer being refused.

Pages are photographed at 375 px and 1280 px into $OUTPOST_SCREENSHOTS, as browser_test.py does.

Run: OUTPOST_BINARY=Server/.build/debug/outpost .build-venv/bin/python Server/Tests/Interop/auth/upstream_browser_test.py
"""

import json
import os
import secrets
import subprocess
import sys
import urllib.parse

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import requests  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

import harness  # noqa: E402
from browser_test import SCREENSHOTS, WAIT, WIDTHS, SignInPages  # noqa: E402
from harness import DEVICE_GRANT, LoopbackSite, pkce_pair, redact  # noqa: E402

DRF = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "drf"))
DOT_CLIENT = "interop-oidc-web"


class DjangoProvider:
    """drf/serve.py: DOT on 127.0.0.1 port 0; it prints one line of JSON when it listens and stops
    when its stdin closes."""

    def __init__(self):
        environment = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", PYTHONUNBUFFERED="1")
        self.process = subprocess.Popen(
            [sys.executable, os.path.join(DRF, "serve.py")], cwd=DRF, env=environment, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = self.process.stdout.readline()
        if not line:
            self.stop()
            raise RuntimeError("serve.py printed no readiness line")
        self.ready = json.loads(line)

    def stop(self):
        if self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=15)


class UpstreamSignIn(SignInPages):
    @classmethod
    def start(cls):
        cls.dot = cls.keep(DjangoProvider())
        cls.server = cls.keep(harness.OutpostServer())
        cls.client_id, _ = cls.server.add_client(
            "Interop Upstream App", redirect_uris=["http://127.0.0.1/callback"],
            grants=["authorization_code", "refresh_token", "device_code"])
        secret = cls.dot.ready["clients"][DOT_CLIENT]["secret"]
        cls.server.cli("providers", "add", "dot", "--issuer", cls.dot.ready["issuer"], "--client-id", DOT_CLIENT,
                       "--client-secret", secret)
        cls.server.start()
        cls.base = cls.server.url
        cls.app = cls.keep(LoopbackSite())
        cls.attacker = cls.keep(LoopbackSite())
        cls.redirect_uri = cls.app.origin + "/callback"
        cls.start_browser()

    def click(self, selector):
        button = self.driver.find_element(By.CSS_SELECTOR, selector)
        marker = secrets.token_hex(8)
        self.driver.execute_script("window.outpostTestMarker = arguments[0]", marker)
        button.click()
        self.wait_for_new_document(marker)

    def shoot_provider(self, name):
        """DOT's own pages, photographed as ours are but not held to their width check: they are DOT's."""
        for width, mobile in WIDTHS:
            metrics = {"width": width, "height": 800, "deviceScaleFactor": 1, "mobile": mobile}
            self.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
            self.driver.save_screenshot(os.path.join(SCREENSHOTS, f"{name}-{width}.png"))
        self.driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})

    def through_dot(self, prefix):
        """From Outpost's page with the button: Continue with dot, DOT's login and consent, back to Outpost."""
        self.assertIn("Continue with dot", self.text())
        self.shoot(f"{prefix}-outpost-page")
        self.click("#upstream-dot")
        self.assertTrue(self.driver.current_url.startswith(self.dot.ready["base_url"] + "/accounts/login/"),
                        f"not DOT's login page: {redact(self.driver.current_url)}")
        self.shoot_provider(f"{prefix}-dot-login")
        self.driver.find_element(By.NAME, "username").send_keys(self.dot.ready["username"])
        self.driver.find_element(By.NAME, "password").send_keys(self.dot.ready["password"])
        self.click("button[type=submit]")
        if "/o/authorize" in self.driver.current_url:  # DOT's consent page
            self.shoot_provider(f"{prefix}-dot-consent")
            self.click("input[name=allow], button[name=allow], input[type=submit][value=Authorize]")

    def test_01_loopback_app_gets_outpost_tokens(self):
        verifier, challenge = pkce_pair()
        state = secrets.token_urlsafe(12)
        before = len(self.app.hits)
        self.driver.get(self.authorize_url(state, challenge))
        self.through_dot("upstream")
        WebDriverWait(self.driver, WAIT).until(
            lambda driver: driver.current_url.startswith(self.app.origin),
            "the app's redirect URI was never reached")
        answer = self.app.wait_for_hit(timeout=WAIT, after=before)
        self.assertIsNotNone(answer)
        self.assertEqual(answer.get("state"), state)
        tokens = self.exchange(answer["code"], verifier)
        self.assertEqual(tokens.status_code, 200, redact(tokens.text))
        me = self.me(tokens.json()["access_token"])
        self.assertEqual(me.status_code, 200)
        self.assertEqual(me.json()["username"], "dot:1")

    def test_02_replayed_answer_is_refused(self):
        _, challenge = pkce_pair()
        self.driver.get(self.authorize_url(secrets.token_urlsafe(12), challenge))
        self.through_dot("upstream-replay")
        WebDriverWait(self.driver, WAIT).until(lambda driver: driver.current_url.startswith(self.app.origin))
        logs = self.driver.get_log("performance")
        callbacks = [json.loads(entry["message"])["message"]["params"].get("request", {}).get("url", "")
                     for entry in logs]
        callback = [url for url in callbacks if "/oauth/upstream/callback" in url][-1]
        self.driver.get(callback)
        self.shoot("upstream-replayed")
        self.assertIn("already finished", self.text())

    def test_03_device_flow_through_dot(self):
        grant = requests.post(self.base + "/oauth/device_authorization",
                              data={"client_id": self.client_id, "scope": "records:read"}, timeout=30).json()
        self.driver.get(self.base + "/device?" + urllib.parse.urlencode({"user_code": grant["user_code"]}))
        self.through_dot("upstream-device")
        self.assertIn("Signed in as dot:1", self.text())
        self.shoot("upstream-device-confirm")
        self.press("allow")
        self.assertIn("Device connected", self.text())
        tokens = requests.post(self.base + "/oauth/token", data={
            "grant_type": DEVICE_GRANT, "device_code": grant["device_code"], "client_id": self.client_id}, timeout=30)
        self.assertEqual(tokens.status_code, 200, redact(tokens.text))


# Only this module's tests: the helpers of SignInPages are reused, its tests are not run again.
for _name in dir(SignInPages):
    if _name.startswith("test_") and _name not in UpstreamSignIn.__dict__:
        setattr(UpstreamSignIn, _name, None)
del SignInPages

if __name__ == "__main__":
    harness.run_suite("upstream browser interop", globals(),
                      epilogue=f"screenshots (375 px and 1280 px): {SCREENSHOTS}/index.html")
