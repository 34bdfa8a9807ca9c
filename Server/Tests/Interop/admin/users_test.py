"""The console's users screens in headless Chromium: the list, a search and a user's page at 375 and
1280 px with axe-core's WCAG 2.2 A/AA rules, disabling a user by keyboard only (then their
sign-in refused), and a user without the admin role refused.

Run: OUTPOST_BINARY=Server/.build/debug/outpost .build-venv/bin/python Server/Tests/Interop/admin/users_test.py
"""

import os
import sys
import urllib.parse

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import console  # noqa: E402


class UsersScreens(console.ConsoleTestCase):
    TARGET = "grace_hopper"

    @classmethod
    def prepare(cls, server):
        server.add_user(cls.TARGET)
        server.cli("users", "role", "add", cls.TARGET, "editor")
        server.cli("users", "quota", cls.TARGET, "--records", "500", "--file-bytes", "10m")
        for index in range(5):
            server.add_user(f"member{index}")

    def test_list_and_search(self):
        self.sign_in(self.ADMIN, then="/admin/users")
        self.assertEqual("Users", self.heading())
        table = self.text("users")
        for name in (self.ADMIN, self.USER, self.TARGET, "member0", "member4"):
            self.assertIn(name, table)
        self.check_page("users")
        # A search, typed and sent by keyboard; `_` is a plain character, not a wildcard.
        self.keyboard_fill("q", "_")
        self.keyboard_press("search")
        self.assertIn("q=_", self.path())
        rows = self.driver.find_elements("css selector", "#users tbody tr")
        self.assertEqual([self.TARGET], [row.find_element("css selector", "a").text for row in rows])
        self.check_page("users-search")
        self.keyboard_fill("q", "nobody-at-all")
        self.keyboard_press("search")
        self.assertIn("No user matches this search.", self.text())

    def test_user_page(self):
        self.sign_in(self.ADMIN, then="/admin/users?q=grace")
        self.click_link(self.TARGET)
        self.assertEqual(f"User {self.TARGET}", self.heading())
        self.assertIn("Active", self.text("user-details"))
        self.assertIn("editor", self.text("roles"))
        self.assertIn("500", self.text("quotas"))
        self.check_page("user")

    def test_disable_by_keyboard_only(self):
        self.sign_in(self.ADMIN, then="/admin/users?q=member3")
        self.click_link("member3")
        self.keyboard_press("disable")
        self.assertEqual("member3 is disabled and signed out everywhere.", self.notice())
        self.assertIn("Disabled since", self.text("user-details"))
        self.check_page("user-disabled")
        # member3's own sign-in is refused now, and says why (the password was right).
        self.driver.execute_cdp_cmd("Network.clearBrowserCookies", {})
        self.sign_in("member3")
        self.assertIn("This account is disabled. Ask the server's operator to enable it.", self.alerts())
        # Enabled again by keyboard, by the admin.
        self.driver.execute_cdp_cmd("Network.clearBrowserCookies", {})
        self.sign_in(self.ADMIN, then="/admin/users?q=member3")
        self.click_link("member3")
        self.keyboard_press("enable")
        self.assertEqual("member3 may sign in again.", self.notice())

    def test_plain_user_is_refused(self):
        self.sign_in(self.USER, then="/admin/users")
        self.assertEqual("Not an operator", self.heading())
        self.assertNotIn(self.TARGET, self.text())
        self.visit("/admin/users?q=grace")
        self.assertEqual("Not an operator", self.heading())
        self.check_page("users-refused")

    def click_link(self, text):
        marker = self.mark()
        self.driver.find_element("link text", text).click()
        self.wait_for_new_document(marker)


if __name__ == "__main__":
    console.run("admin console users", globals())
