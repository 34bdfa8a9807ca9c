"""The Prometheus metrics of `outpost serve --metrics-port 0`, read with the `prometheus_client`
package's own text-format parser, as a Prometheus server would read them:

- requests made with Python requests move the request counters and timers by exactly what they
  did, by route pattern, method and status; a failed and a successful sign-in move the sign-in
  counter by grant and outcome; scrapes of the metrics listener are not counted as requests;
- 1,000 requests for random paths, and requests with made-up methods, add no label value but
  `unmatched` and `other`: the label sets stay bounded whatever clients send.

Run: OUTPOST_BINARY=Server/.build/debug/outpost .build-venv/bin/python Server/Tests/Interop/live/metrics_test.py
"""

import os
import re
import sys
import time
import uuid

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "auth"))

import requests  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

import harness  # noqa: E402
from harness import describe  # noqa: E402

WAIT = 30.0
MAX_SCRAPE = 8 << 20  # bound on one scrape's text
REQUESTS = "outpost_http_requests_total"
DURATION_COUNT = "outpost_http_request_duration_seconds_count"
SIGN_INS = "outpost_sign_ins_total"


def scrape(url):
    """Every sample of one scrape, as {(name, ((label, value), ...)): value}."""
    answer = requests.get(url, timeout=WAIT)
    if answer.status_code != 200:
        raise AssertionError(f"GET {url}: {describe(answer)}")
    if len(answer.content) > MAX_SCRAPE:
        raise AssertionError(f"a scrape of {len(answer.content)} bytes")
    if not answer.headers.get("Content-Type", "").startswith("text/plain; version=0.0.4"):
        raise AssertionError(f"Content-Type {answer.headers.get('Content-Type')!r}")
    samples = {}
    for family in text_string_to_metric_families(answer.text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def value(samples, name, **labels):
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def label_values(samples, name, label):
    return {dict(key[1]).get(label) for key in samples if key[0] == name}


class Metrics(harness.Suite):
    @classmethod
    def start(cls):
        cls.server = cls.keep(harness.OutpostServer())
        cls.server.add_user("ada")
        cls.client_id, _ = cls.server.add_client("Metrics interop", grants=["password"])
        cls.server.start(extra_args=["--metrics-port", "0"])
        cls.base = cls.server.url
        cls.metrics = cls.metrics_url()
        cls.http = cls.keep(requests.Session())

    @classmethod
    def metrics_url(cls):
        """The metrics listener's URL, from the line `outpost serve` prints once it listens."""
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            match = re.search(r"metrics listening on (http://[0-9.]+:[0-9]+/metrics)", cls.server.log())
            if match:
                return match.group(1)
            time.sleep(0.05)  # polling for readiness, bounded by WAIT
        raise AssertionError(f"outpost serve printed no metrics address: {cls.server.log()}")

    def settled(self, expected):
        """A scrape in which every (name, labels) → value of `expected` holds. A request is counted
        once its answer's last byte is written, so a scrape may come just before the last one is."""
        deadline = time.monotonic() + WAIT
        while True:
            samples = scrape(self.metrics)
            missing = {key: value(samples, key[0], **dict(key[1])) for key, want in expected.items()
                       if value(samples, key[0], **dict(key[1])) != want}
            if not missing:
                return samples
            if time.monotonic() > deadline:
                raise AssertionError(f"after {WAIT:.0f} s the metrics are {missing}, expected {expected}")
            time.sleep(0.05)  # polling, bounded by WAIT

    def token(self, password):
        return self.http.post(f"{self.base}/oauth/token", data={
            "grant_type": "password", "username": "ada", "password": password, "client_id": self.client_id,
            "scope": "records:read"}, timeout=WAIT)

    def test_requests_move_the_counters_by_exactly_what_was_done(self):
        before = scrape(self.metrics)

        def key(name, **labels):
            return (name, tuple(sorted(labels.items())))

        health = dict(route="/health", method="GET", status="200")
        for _ in range(5):
            answer = self.http.get(f"{self.base}/health", timeout=WAIT)
            self.assertEqual(answer.status_code, 200, describe(answer))
        statuses = {}
        for _ in range(2):
            answer = self.http.get(f"{self.base}/records/notes/{uuid.uuid4()}", timeout=WAIT)
            statuses[str(answer.status_code)] = statuses.get(str(answer.status_code), 0) + 1
        failed = self.token("not the password")
        self.assertEqual(failed.status_code, 400, describe(failed))
        succeeded = self.token(harness.PASSWORD)
        self.assertEqual(succeeded.status_code, 200, describe(succeeded))

        expected = {
            key(REQUESTS, **health): value(before, REQUESTS, **health) + 5,
            key(DURATION_COUNT, **health): value(before, DURATION_COUNT, **health) + 5,
            key(SIGN_INS, grant="password", outcome="failure"):
                value(before, SIGN_INS, grant="password", outcome="failure") + 1,
            key(SIGN_INS, grant="password", outcome="success"):
                value(before, SIGN_INS, grant="password", outcome="success") + 1,
        }
        token_route = dict(route="/oauth/token", method="POST")
        for status, count in (("400", 1), ("200", 1)):
            labels = dict(token_route, status=status)
            expected[key(REQUESTS, **labels)] = value(before, REQUESTS, **labels) + count
        for status, count in statuses.items():
            labels = dict(route="/records/{type}/{id}", method="GET", status=status)
            expected[key(REQUESTS, **labels)] = value(before, REQUESTS, **labels) + count
        after = self.settled(expected)
        self.assertNotIn("/metrics", label_values(after, REQUESTS, "route"), "scrapes are not requests of the server")
        # Nothing else moved: the other request series are as they were.
        for sample_key, count in after.items():
            if sample_key[0] == REQUESTS and sample_key not in expected:
                self.assertEqual(count, before.get(sample_key, 0.0), f"{sample_key} moved")

    def test_labels_stay_bounded_whatever_paths_and_methods_clients_send(self):
        unmatched = dict(route="unmatched", method="GET", status="404")
        before = scrape(self.metrics)
        for _ in range(1000):
            answer = self.http.get(f"{self.base}/{uuid.uuid4().hex}/{uuid.uuid4().hex}", timeout=WAIT)
            self.assertEqual(answer.status_code, 404, describe(answer))
        for method in ("BREW", "PROPFIND", "X-" + uuid.uuid4().hex[:8].upper()):
            self.http.request(method, f"{self.base}/health", timeout=WAIT)
        after = self.settled({(REQUESTS, tuple(sorted(unmatched.items()))): value(before, REQUESTS, **unmatched) + 1000})
        routes = label_values(after, REQUESTS, "route")
        self.assertLessEqual(routes - label_values(before, REQUESTS, "route"), {"unmatched"})
        self.assertFalse([r for r in routes if r != "unmatched" and not r.startswith("/")], routes)
        methods = label_values(after, REQUESTS, "method")
        self.assertLessEqual(methods, {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "other"})
        self.assertIn("other", methods)
        series = [key for key in after if key[0] == REQUESTS]
        self.assertLess(len(series), 100, "request series stay few")


if __name__ == "__main__":
    harness.run_suite("metrics interop", globals())
