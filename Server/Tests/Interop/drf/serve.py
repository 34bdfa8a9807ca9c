"""Starts the interop backend: migrates a fresh SQLite database in a temporary directory, creates a
user and one OAuth application per grant, and serves on 127.0.0.1 on a port the OS picks.

When it listens it prints one line of JSON to stdout, {"port": ..., "base_url": ..., ...}; then it
serves until it gets SIGTERM or SIGINT, or its stdin closes (the test process that started it is
gone), and removes the temporary directory.

    python serve.py            # with the interop virtualenv's python (bash .ci/python-venv.sh)
"""
import json
import os
import signal
import sys
import tempfile
import threading
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

USERNAME = "ada"
PASSWORD = "interop-password-1"
CLIENTS = {
    # client_id: (client_type, grant type, secret, skip_authorization, redirect URIs)
    "interop-browser": ("public", "authorization-code", None, True, "http://127.0.0.1/callback"),
    "interop-password": ("confidential", "password", "interop-password-secret", False, ""),
    "interop-service": ("confidential", "client-credentials", "interop-service-secret", False, ""),
    "interop-device": ("public", "urn:ietf:params:oauth:grant-type:device_code", None, False, ""),
    # Signs RS256 ID tokens for the code flow with scope openid (Outpost's token exchange tests).
    "interop-oidc": ("public", "authorization-code", None, True, "http://127.0.0.1/callback"),
    "interop-oidc-other": ("public", "authorization-code", None, True, "http://127.0.0.1/callback"),
    # Outpost's web sign-in as DOT's relying party: a confidential client, DOT's consent page shown,
    # back to Outpost's callback on any loopback port (RFC 8252).
    "interop-oidc-web": (
        "confidential", "authorization-code", "interop-oidc-web-secret", False,
        "http://127.0.0.1/oauth/upstream/callback",
    ),
}


def main():
    workdir = tempfile.TemporaryDirectory(prefix="outpost-drf-")
    os.environ["INTEROP_DB"] = str(Path(workdir.name) / "interop.sqlite")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "interop.settings")
    from jwcrypto import jwk

    os.environ["INTEROP_OIDC_KEY"] = jwk.JWK.generate(kty="RSA", size=2048).export_to_pem(
        private_key=True, password=None
    ).decode()

    def stop(signum, frame):
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    # A parent's blocked signals are inherited (a Swift test process blocks most): unblock ours.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})

    def watch_parent():
        # Whoever started the server holds our stdin open; at EOF it is gone, and so are we.
        while sys.stdin.buffer.read(4096):
            pass
        os.kill(os.getpid(), signal.SIGTERM)

    if not sys.stdin.isatty():
        threading.Thread(target=watch_parent, daemon=True).start()
    try:
        serve()
    finally:
        workdir.cleanup()


def serve():
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.core.servers.basehttp import run
    from django.core.wsgi import get_wsgi_application
    from oauth2_provider.models import get_application_model

    call_command("migrate", verbosity=0, interactive=False)
    user = get_user_model().objects.create_user(USERNAME, password=PASSWORD)
    Application = get_application_model()
    for client_id, (client_type, grant, secret, skip, redirects) in CLIENTS.items():
        Application.objects.create(
            name=client_id,
            client_id=client_id,
            client_secret=secret or "",
            client_type=client_type,
            authorization_grant_type=grant,
            skip_authorization=skip,
            redirect_uris=redirects,
            user=user,
            algorithm="RS256" if client_id.startswith("interop-oidc") else "",
        )

    handler = get_wsgi_application()

    def on_bind(port):
        base = f"http://127.0.0.1:{port}"
        settings.OAUTH2_PROVIDER["OAUTH_DEVICE_VERIFICATION_URI"] = base + "/o/device/"
        from oauth2_provider.settings import oauth2_settings

        oauth2_settings.reload()
        ready = {
            "port": port,
            "base_url": base,
            "username": USERNAME,
            "password": PASSWORD,
            "clients": {cid: {"secret": spec[2]} for cid, spec in CLIENTS.items()},
            "issuer": base + "/o",
        }
        print(json.dumps(ready), flush=True)

    run("127.0.0.1", 0, handler, ipv6=False, threading=True, on_bind=on_bind)


if __name__ == "__main__":
    main()
