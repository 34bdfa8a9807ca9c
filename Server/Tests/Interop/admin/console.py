"""The base of the console's Chromium suites: a real `outpost serve` with an admin and a plain user,
headless Chromium driven by selenium, and the checks every console page must pass at a phone's and
a desktop's width: no sideways scrolling of the page, no WCAG 2.2 A/AA violation that axe-core
(Deque's engine, run in the page) finds, and a screenshot for review.

Screenshots go to $OUTPOST_SCREENSHOTS (names start with admin-); index.html beside them shows them.
"""

import importlib.util
import os
import secrets
import sys
import time

sys.dont_write_bytecode = True
AUTH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "auth")
sys.path.insert(0, AUTH)

from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

import browser_test  # noqa: E402
import harness  # noqa: E402
from browser_test import SCREENSHOTS, WIDTHS  # noqa: E402
from harness import PASSWORD  # noqa: E402

WAIT = 15.0
# The WCAG 2.0, 2.1 and 2.2 success criteria of levels A and AA that axe-core tests automatically.
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]
# The longest keyboard walk to one element; a page needing more tab stops is itself a finding.
MAX_TAB_STOPS = 120


def axe_source():
    """axe.min.js as bundled by the axe-playwright-python package (only the file is used)."""
    spec = importlib.util.find_spec("axe_playwright_python")
    if spec is None or spec.origin is None:
        raise RuntimeError("axe-playwright-python is not installed; run .ci/python-venv.sh")
    with open(os.path.join(os.path.dirname(spec.origin), "axe.min.js"), encoding="utf-8") as handle:
        return handle.read()


class ConsoleTestCase(browser_test.BrowserSuite):
    """A server with `ADMIN` (role admin) and `USER` (no role), and one Chromium for the class."""

    ADMIN = "console-admin"
    USER = "plain-user"
    AXE = None

    @classmethod
    def prepare(cls, server):
        """Override to add users, clients, rules or records with the CLI before the server starts."""

    @classmethod
    def serve_arguments(cls):
        """Override to add `outpost serve` options."""
        return []

    @classmethod
    def start(cls):
        cls.server = cls.keep(harness.OutpostServer())
        cls.server.add_user(cls.ADMIN)
        cls.server.cli("users", "role", "add", cls.ADMIN, "admin")
        cls.server.add_user(cls.USER)
        cls.prepare(cls.server)
        cls.server.start(cls.serve_arguments())
        cls.base = cls.server.url
        if ConsoleTestCase.AXE is None:
            ConsoleTestCase.AXE = axe_source()
        cls.start_browser()

    # Moving around.

    def visit(self, path):
        """Opens `path` of the server and waits for the document."""
        self.driver.get(self.base + path)
        WebDriverWait(self.driver, WAIT).until(lambda d: d.execute_script("return document.readyState") == "complete")

    def path(self):
        """The current page's path and query."""
        url = self.driver.current_url
        return url[len(self.base):] if url.startswith(self.base) else url

    def mark(self):
        marker = secrets.token_hex(8)
        self.driver.execute_script("window.outpostTestMarker = arguments[0]", marker)
        return marker

    def click(self, element_id):
        """Clicks the element and waits for the page it leads to."""
        marker = self.mark()
        self.driver.find_element(By.ID, element_id).click()
        self.wait_for_new_document(marker)

    def fill(self, element_id, value):
        field = self.driver.find_element(By.ID, element_id)
        field.clear()
        field.send_keys(value)

    def text(self, element_id=None):
        element = self.driver.find_element(By.ID, element_id) if element_id else self.driver.find_element(By.TAG_NAME, "body")
        return " ".join(element.text.split())

    def heading(self):
        return self.text_of_first("h1")

    def text_of_first(self, selector):
        found = self.driver.find_elements(By.CSS_SELECTOR, selector)
        return " ".join(found[0].text.split()) if found else ""

    def alerts(self):
        return [" ".join(e.text.split()) for e in self.driver.find_elements(By.CSS_SELECTOR, "[role=alert]") if e.text.strip()]

    def notice(self):
        return self.text_of_first("#notice")

    def sign_in(self, username, password=PASSWORD, then=None):
        """Signs in through the console's own sign-in page (then opens `then`, when given)."""
        self.visit("/admin/sign-in")
        self.fill("username", username)
        self.fill("password", password)
        self.click("sign-in")
        if then:
            self.visit(then)

    # Keyboard only.

    def press(self, *keys):
        ActionChains(self.driver).send_keys(*keys).perform()

    def active_id(self):
        return self.driver.execute_script("return document.activeElement && document.activeElement.id")

    def tab_to(self, element_id):
        """Presses Tab from the top of the page until `element_id` has the focus, and checks that the
        focus is visible there (an outline or a ring)."""
        self.driver.execute_script("document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0)")
        self.driver.find_element(By.TAG_NAME, "body")
        for _ in range(MAX_TAB_STOPS):
            self.press(Keys.TAB)
            if self.active_id() == element_id:
                visible = self.driver.execute_script(
                    "const s = getComputedStyle(document.activeElement);"
                    "return (s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) > 0) || s.boxShadow !== 'none'")
                self.assertTrue(visible, f"#{element_id} has the focus, and nothing shows it")
                return
        self.fail(f"#{element_id} was not reached with {MAX_TAB_STOPS} presses of Tab (last: #{self.active_id()})")

    def keyboard_fill(self, element_id, value):
        """Tabs to the field and types `value` (after selecting what it held)."""
        self.tab_to(element_id)
        ActionChains(self.driver).key_down(Keys.CONTROL).send_keys("a").key_up(Keys.CONTROL).perform()
        self.press(Keys.DELETE)
        self.press(value)

    def keyboard_press(self, element_id, key=Keys.ENTER):
        """Tabs to the control and presses `key` (Enter by default); waits for the page it leads to."""
        self.tab_to(element_id)
        marker = self.mark()
        self.press(key)
        self.wait_for_new_document(marker)

    # The checks of every page.

    def check_page(self, name):
        """At 375 and 1280 px: no sideways scrolling of the page, no axe-core WCAG 2.2 A/AA violation,
        and a full-page screenshot admin-NAME-WIDTH.png."""
        driver = self.driver
        for width, mobile in WIDTHS:
            metrics = {"width": width, "height": 800, "deviceScaleFactor": 1, "mobile": mobile}
            driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
            overflow = driver.execute_script("return document.documentElement.scrollWidth")
            self.assertLessEqual(overflow, width, f"{name}: the page is wider than {width} px ({overflow} px)")
            violations = self.axe()
            self.assertEqual([], violations, f"{name} at {width} px: WCAG violations found by axe-core")
            height = driver.execute_script("return document.documentElement.scrollHeight")
            metrics["height"] = max(600, min(int(height), 4000))
            driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
            driver.save_screenshot(os.path.join(SCREENSHOTS, f"admin-{name}-{width}.png"))
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})

    def axe(self):
        """axe-core's violations of the WCAG A/AA rules on the current page, one line each."""
        self.driver.execute_script(self.AXE)
        self.driver.set_script_timeout(WAIT * 2)
        results = self.driver.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "axe.run(document, {runOnly: {type: 'tag', values: arguments[0]}, resultTypes: ['violations']})"
            ".then(r => done(r.violations.map(v => v.id + ': ' + v.help + ' at '"
            " + v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(', '))))"
            ".catch(e => done(['axe failed: ' + e]))", AXE_TAGS)
        return results


def run(name, module_globals):
    harness.run_suite(name, module_globals, epilogue=f"screenshots (375 px and 1280 px): {SCREENSHOTS}/index.html")


def wait_until(condition, message, timeout=WAIT):
    """Polls `condition` (bounded by `timeout`): for what a page's own script changes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(message)
