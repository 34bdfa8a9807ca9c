"""The console's records section in headless Chromium: the record types, a type's rules (changed and
tried), its records (browsed with a filter, shown, edited and deleted), each screen at 375 and 1280 px
with axe-core's WCAG 2.2 A/AA rules, one action per screen by keyboard only, and a plain user refused.

Run: OUTPOST_BINARY=Server/.build/debug/outpost .build-venv/bin/python Server/Tests/Interop/admin/records_test.py
"""

import json
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import requests  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402

import console  # noqa: E402
from harness import PASSWORD  # noqa: E402

HOSTILE = {"title": "<script>alert(1)</script>", "x": "\"><img src=x onerror=alert(1)>"}


class RecordsScreens(console.ConsoleTestCase):
    @classmethod
    def prepare(cls, server):
        cls.client_id, _ = server.add_client("records seed", grants=["password"])
        server.cli("rules", "set", "memos", "read", "record.owner == caller.user || record.shared == true")

    @classmethod
    def start(cls):
        super().start()
        token = requests.post(cls.base + "/oauth/token", data={
            "grant_type": "password", "username": cls.USER, "password": PASSWORD, "client_id": cls.client_id,
            "scope": "records:read records:write"}, timeout=15).json()["access_token"]
        cls.ids = {}
        for name, body in [("edit", {"title": "to edit"}), ("delete", {"title": "to delete"}), ("list", {"title": "to list"}),
                           ("hostile", HOSTILE)]:
            reply = requests.post(cls.base + "/records/memos", json=body, timeout=15,
                                  headers={"Authorization": f"Bearer {token}"})
            reply.raise_for_status()
            cls.ids[name] = reply.json()["id"]

    def test_types_page_and_rule_change_by_keyboard_only(self):
        self.sign_in(self.ADMIN, then="/admin/records")
        self.assertEqual("Record types", self.heading())
        self.assertIn("memos", self.text("types"))
        self.check_page("records-types")
        link = next(e for e in self.driver.find_elements(By.CSS_SELECTOR, "#types a") if e.text == "memos")
        self.keyboard_press(link.get_attribute("id"))
        self.assertEqual("Type memos", self.heading())
        self.check_page("records-type")
        # The first operation is chosen: set memos.list by keyboard.
        self.keyboard_fill("rule-expression", "caller.signed_in")
        self.keyboard_press("save-rule")
        self.assertEqual("Rule memos.list is set.", self.notice())
        self.assertIn("caller.signed_in", self.text("rules"))
        # A bad expression is refused with the reason, and the page still passes.
        self.fill("rule-expression", "record.owner ==")
        self.click("save-rule")
        self.assertTrue(any("types.memos.list" in alert for alert in self.alerts()), self.alerts())
        self.check_page("records-rule-refused")

    def test_rule_trial_by_keyboard_only(self):
        self.sign_in(self.ADMIN, then="/admin/records/memos")
        # The first operation, list: the owner lists the record.
        self.keyboard_fill("trial-username", self.USER)
        self.keyboard_fill("trial-record-id", self.ids["hostile"])
        self.keyboard_press("test-rule")
        self.assertEqual("Result: allowed", self.text("trial-result"))
        self.assertIn("in the caller's lists", self.text("trial-outcome"))
        # Another user reads it: the read rule hides it, as a real request would find.
        self.tab_to("trial-operation")
        self.press("r")
        self.keyboard_fill("trial-username", self.ADMIN)
        self.keyboard_press("test-rule")
        self.assertEqual("Result: denied", self.text("trial-result"))
        self.assertIn("404 record_not_found", self.text("trial-outcome"))
        self.check_page("records-trial")

    def test_list_with_a_filter_by_keyboard_only(self):
        self.sign_in(self.ADMIN, then="/admin/records/memos/list")
        self.assertEqual("Records of memos", self.heading())
        self.check_page("records-list")
        self.keyboard_fill("filter", 'record.title == "to list"')
        self.keyboard_press("show")
        rows = self.driver.find_elements(By.CSS_SELECTOR, "#records tbody tr")
        self.assertEqual(1, len(rows))
        self.assertIn(self.ids["list"], rows[0].text)

    def test_record_shown_escaped_and_edited_by_keyboard_only(self):
        self.sign_in(self.ADMIN, then=f"/admin/records/memos/{self.ids['hostile']}")
        self.assertEqual([], self.driver.find_elements(By.CSS_SELECTOR, "main img, main script"))
        self.assertIn("<script>alert(1)</script>", self.text("fields"))
        self.check_page("records-record")
        self.visit(f"/admin/records/memos/{self.ids['edit']}")
        self.keyboard_fill("record-json", '{"title": "edited by keyboard"}')
        self.keyboard_press("save-record")
        self.assertIn("is saved (version 2)", self.notice())
        self.assertEqual({"title": "edited by keyboard"}, json.loads(self.text("fields")))
        # Invalid JSON is refused with the reason; the text stays in the form.
        self.fill("record-json", '{"title": ')
        self.click("save-record")
        self.assertTrue(any("not valid JSON" in alert for alert in self.alerts()), self.alerts())
        self.assertEqual('{"title": ', self.driver.find_element(By.ID, "record-json").get_attribute("value"))
        self.check_page("records-edit-refused")

    def test_delete_asks_for_confirmation_by_keyboard_only(self):
        self.sign_in(self.ADMIN, then=f"/admin/records/memos/{self.ids['delete']}")
        self.keyboard_press("delete-record")
        self.assertTrue(any("I understand" in alert for alert in self.alerts()), self.alerts())
        self.tab_to("record-delete-confirm")
        self.press(Keys.SPACE)
        self.keyboard_press("delete-record")
        self.assertEqual("/admin/records/memos/list", self.path())
        self.assertIn("is deleted", self.notice())
        self.visit(f"/admin/records/memos/{self.ids['delete']}")
        self.assertEqual("Record not found", self.heading())

    def test_plain_user_is_refused(self):
        self.sign_in(self.USER)
        for path in ["/admin/records", "/admin/records/memos", f"/admin/records/memos/{self.ids['hostile']}"]:
            self.visit(path)
            self.assertEqual("Not an operator", self.heading(), path)
            self.assertNotIn("to edit", self.text())


if __name__ == "__main__":
    console.run("admin console records", globals())
