"""Schemathesis hooks for .ci/schemathesis.sh (loaded through SCHEMATHESIS_HOOKS).

Generated Idempotency-Key values are short and repeat ("0", "A", ...), so one key ends up on many
different requests: the server then rightly answers 422 idempotency_key_reused, or replays the first
201 for a record deleted since. Real clients send a fresh key per logical request, so every valid
generated key gets a unique suffix here. Invalid keys (the negative tests) are left as they are.
"""

import itertools
import os

import schemathesis

_counter = itertools.count()
_run = os.urandom(4).hex()


def _is_valid_key(value: object) -> bool:
    return isinstance(value, str) and 1 <= len(value) and all(0x20 <= ord(c) <= 0x7E for c in value)


@schemathesis.hook
def before_call(context, case, kwargs):
    headers = case.headers
    if not headers:
        return
    for name in list(headers):
        if name.lower() != "idempotency-key" or not _is_valid_key(headers[name]):
            continue
        suffix = f"-{_run}-{next(_counter)}"
        headers[name] = headers[name][: 255 - len(suffix)] + suffix
