"""The console's operations pages in headless Chromium: clients, signing keys, the audit log, recent
errors and live changes, each at 375 and 1280 px with axe-core's WCAG 2.2 A/AA rules; a client
registered by keyboard only; a record written by a real HTTP client (requests) appearing on the open
live changes page without a reload; a plain user refused.

Run: OUTPOST_BINARY=Server/.build/debug/outpost .build-venv/bin/python Server/Tests/Interop/admin/operations_test.py
"""

import os
import re
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import requests  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402

import console  # noqa: E402
from harness import PASSWORD  # noqa: E402

PAGES = ["/admin/clients", "/admin/keys", "/admin/audit", "/admin/errors", "/admin/changes"]


class ConsoleOperations(console.ConsoleTestCase):
    @classmethod
    def prepare(cls, server):
        cls.writer, cls.writer_secret = server.add_client(
            "Record writer", grants=["password"], scopes=["records:read", "records:write"], confidential=True)
        server.add_client("<script>alert(1)</script> app", redirect_uris=["https://app.example/cb"],
                          grants=["authorization_code"])

    def token(self):
        answer = requests.post(self.base + "/oauth/token", data={
            "grant_type": "password", "username": self.USER, "password": PASSWORD, "scope": "records:write records:read",
        }, auth=(self.writer, self.writer_secret), timeout=10)
        self.assertEqual(200, answer.status_code, answer.text)
        return answer.json()["access_token"]

    def write_note(self, token, text):
        answer = requests.post(self.base + "/records/notes", json={"text": text},
                               headers={"Authorization": "Bearer " + token}, timeout=10)
        self.assertEqual(201, answer.status_code, answer.text)
        return answer.json()["id"]

    def test_every_page_at_both_widths(self):
        # A failed request for the errors page, with a query that must never show.
        requests.get(self.base + "/records/notes/x", params={"access_token": "do-not-show"}, timeout=10)
        requests.post(self.base + "/lambdas/none", data=b"x" * 10, timeout=10)
        self.sign_in(self.ADMIN)
        for path, heading in zip(PAGES, ["Clients", "Signing keys", "Audit log", "Recent errors", "Live changes"]):
            self.visit(path)
            self.assertEqual(heading, self.heading())
            self.check_page(path.rsplit("/", 1)[1])
        self.visit("/admin/clients")
        self.assertIn("<script>alert(1)</script> app", self.text("clients"))
        self.assertFalse(self.driver.execute_script("return window.alerted === true"))
        self.visit("/admin/errors")
        self.assertNotIn("do-not-show", self.driver.page_source)
        # The keys page's one action.
        self.visit("/admin/keys")
        self.click("rotate")
        self.assertIn("is in use", self.notice())
        self.check_page("keys-rotated")

    def test_register_a_client_by_keyboard_only(self):
        self.sign_in(self.ADMIN, then="/admin/clients")
        self.keyboard_fill("name", "Keyboard app")
        self.keyboard_fill("redirect_uris", "https://keyboard.example/cb")
        self.tab_to("grant-device_code")
        self.press(Keys.SPACE)
        self.tab_to("confidential")
        self.press(Keys.SPACE)
        self.keyboard_press("register")
        self.assertEqual("Client registered", self.heading())
        secret = self.text("client-secret")
        self.assertTrue(secret.startswith("ocs_"), "the new secret is shown")
        client_id = self.text("client-id")
        self.check_page("client-registered")
        # The secret works at the token endpoint at once.
        answer = requests.post(self.base + "/oauth/device_authorization", data={"client_id": client_id},
                               auth=(client_id, secret), timeout=10)
        self.assertEqual(200, answer.status_code, answer.text)
        # The client's page, its rotation by keyboard, and the new secret shown once.
        self.keyboard_press("open-client")
        self.check_page("client")
        self.keyboard_press("rotate")
        self.assertNotEqual(secret, self.text("client-secret"))
        self.check_page("client-secret-rotated")
        refused = requests.post(self.base + "/oauth/device_authorization", data={"client_id": client_id},
                                auth=(client_id, secret), timeout=10)
        self.assertEqual(401, refused.status_code)
        # The audit log shows the registration by the admin, by name.
        self.visit("/admin/audit?action=client.")
        events = self.text("events")
        self.assertIn("client.added", events)
        self.assertIn("client.secret_rotated", events)
        self.assertIn(self.ADMIN, events)

    def test_live_changes_appear_without_a_reload(self):
        token = self.token()
        self.write_note(token, "before")
        self.sign_in(self.ADMIN, then="/admin/changes?type=notes")
        marker = self.mark()
        rows = len(self.driver.find_elements(By.CSS_SELECTOR, "#changes-rows tr"))
        self.assertGreaterEqual(rows, 1)
        record = self.write_note(token, "live")
        console.wait_until(lambda: record in self.text("changes-rows"), "the new change did not appear")
        self.assertEqual(marker, self.driver.execute_script("return window.outpostTestMarker"), "the page reloaded")
        self.assertIn("1 new change", self.text("live-status"))
        self.assertEqual(rows + 1, len(self.driver.find_elements(By.CSS_SELECTOR, "#changes-rows tr")))
        self.check_page("changes-live")
        # Without script the page still has its way to newer changes.
        self.assertTrue(self.driver.find_element(By.ID, "show-newer").get_attribute("href").endswith("/admin/changes?type=notes"))

    def test_a_plain_user_is_refused(self):
        self.sign_in(self.USER)
        for path in PAGES:
            self.visit(path)
            self.assertEqual("Not an operator", self.heading())
        self.visit("/admin/changes/feed?after=0")
        self.assertNotIn('"changes"', self.driver.page_source)
        cookies = {c["name"]: c["value"] for c in self.driver.get_cookies()}
        answer = requests.get(self.base + "/admin/changes/feed?after=0", cookies=cookies, allow_redirects=False,
                              timeout=10)
        self.assertEqual(403, answer.status_code)
        self.assertIsNone(re.search(r'"changes"', answer.text))


if __name__ == "__main__":
    console.run("admin console operations", globals())
