"""The console's door in headless Chromium: its sign-in (by keyboard only), the overview, signing out,
an anonymous visitor sent to the sign-in and a user without the admin role refused, each page at
375 and 1280 px with axe-core's WCAG 2.2 A/AA rules.

Run: OUTPOST_BINARY=Server/.build/debug/outpost .build-venv/bin/python Server/Tests/Interop/admin/overview_test.py
"""

import os
import sys
import urllib.parse

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from selenium.webdriver.common.keys import Keys  # noqa: E402

import console  # noqa: E402
from harness import PASSWORD  # noqa: E402


class ConsoleDoor(console.ConsoleTestCase):
    def test_anonymous_visitor_is_sent_to_the_sign_in(self):
        self.visit("/admin")
        path = urllib.parse.urlsplit(self.path())
        self.assertEqual("/admin/sign-in", path.path)
        self.assertEqual(["/admin"], urllib.parse.parse_qs(path.query).get("return_to"))
        self.assertEqual("Sign in to the console", self.heading())
        self.check_page("sign-in")

    def test_wrong_password_is_refused_with_a_message(self):
        self.sign_in(self.ADMIN, password="not the password")
        self.assertEqual("Sign in to the console", self.heading())
        self.assertIn("The username or password is wrong.", self.alerts())
        self.check_page("sign-in-refused")

    def test_user_without_the_role_is_refused(self):
        self.sign_in(self.USER)
        self.assertEqual("Not an operator", self.heading())
        self.assertTrue(any(self.USER in alert and "no admin role" in alert for alert in self.alerts()), self.alerts())
        self.assertNotIn("Overview", self.text_of_first("nav"))
        self.check_page("not-an-operator")
        # Signing out from the refusal leaves room for another account.
        self.click("sign-out")
        self.assertEqual("/admin/sign-in", urllib.parse.urlsplit(self.path()).path)

    def test_admin_signs_in_finds_the_overview_and_signs_out_by_keyboard_only(self):
        self.visit("/admin")
        self.keyboard_fill("username", self.ADMIN)
        self.keyboard_fill("password", PASSWORD)
        self.keyboard_press("sign-in")
        self.assertEqual("/admin", self.path(), self.alerts())
        self.assertEqual("Overview", self.heading())
        self.assertEqual(self.ADMIN, self.text("signed-in-as"))
        self.assertIn("SQLite", self.text("server"))
        self.check_page("overview")
        # The skip link is the first stop and moves the focus to the content.
        self.driver.execute_script("document.activeElement && document.activeElement.blur()")
        self.press(Keys.TAB)
        self.assertEqual("Skip to content", self.driver.switch_to.active_element.text)
        self.press(Keys.ENTER)
        self.assertEqual("main", self.active_id())
        # Every section the overview names is reachable with Tab.
        for link in self.driver.find_elements("css selector", "#parts a"):
            self.tab_to(link.get_attribute("id"))
        self.keyboard_press("sign-out")
        self.assertEqual("/admin/sign-in", urllib.parse.urlsplit(self.path()).path)
        self.visit("/admin")
        self.assertEqual("Sign in to the console", self.heading())


if __name__ == "__main__":
    console.run("admin console door", globals())
