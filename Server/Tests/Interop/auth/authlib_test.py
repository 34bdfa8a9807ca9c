"""OAuth 2.0 / OpenID Connect conformance of `outpost serve`, checked with Authlib, a third-party
client library: discovery (RFC 8414), authorization code + PKCE S256, client credentials, refresh
rotation with reuse detection, revocation (RFC 7009), the device grant (RFC 8628), and the OIDC
id_token verified by Authlib's own JOSE code (joserfc) with the server's JWKS.

Run: OUTPOST_BINARY=Server/.build/debug/outpost .build-venv/bin/python Server/Tests/Interop/auth/authlib_test.py
The browser part of the code flow is the server's own HTML forms, posted with `requests`.
"""

import base64
import os
import secrets
import sys
import unittest
import urllib.parse

# Loopback http is this suite's transport; Authlib refuses plain http unless told it is fine.
os.environ["AUTHLIB_INSECURE_TRANSPORT"] = "1"

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import requests  # noqa: E402
from authlib.integrations.base_client import OAuthError  # noqa: E402
from authlib.integrations.requests_client import OAuth2Session  # noqa: E402
from authlib.oauth2.rfc8414 import AuthorizationServerMetadata  # noqa: E402

import harness  # noqa: E402
from harness import DEVICE_GRANT, PASSWORD, FormBrowser, describe, parse_page, redact  # noqa: E402

REDIRECT = "http://127.0.0.1/callback"


class OutpostCase(harness.Suite):
    """One server per test class, with the users and clients the tests need."""

    @classmethod
    def start(cls):
        cls.server = cls.keep(harness.OutpostServer())
        cls.prepare(cls.server)
        cls.server.start()
        cls.base = cls.server.url

    @classmethod
    def prepare(cls, server):
        pass

    def metadata(self, path="/.well-known/oauth-authorization-server"):
        response = requests.get(self.base + path, timeout=30)
        self.assertEqual(response.status_code, 200, describe(response))
        return response.json()

    def me(self, access_token):
        return requests.get(self.base + "/me", headers={"Authorization": f"Bearer {access_token}"}, timeout=30)

    def assertOAuthError(self, expected, call, *args, **kwargs):
        with self.assertRaises(OAuthError, msg=f"expected the server to answer {expected}") as caught:
            call(*args, **kwargs)
        self.assertEqual(caught.exception.error, expected, redact(caught.exception.description))
        return caught.exception

    def public_session(self, client_id, scope=None, **kwargs):
        return OAuth2Session(
            client_id, token_endpoint_auth_method="none", revocation_endpoint_auth_method="none", scope=scope,
            redirect_uri=REDIRECT, code_challenge_method="S256", **kwargs)

    def authorize(self, session, username, extra=None):
        """Runs the authorization endpoint like a person in a browser: Authlib builds the URL, the
        server's sign-in/consent form is filled and allowed. Returns (redirect location, verifier, state)."""
        verifier = secrets.token_urlsafe(48)
        url, state = session.create_authorization_url(
            self.endpoints["authorization_endpoint"], code_verifier=verifier, **(extra or {}))
        browser = FormBrowser(self.base)
        response = browser.get(url)
        self.assertEqual(response.status_code, 200, f"the sign-in page: {describe(response)}")
        for _ in range(3):  # sign-in, then a consent step if the server has a separate one
            response = browser.submit(response, {"username": username, "password": PASSWORD}, decision="allow")
            if response.status_code in (302, 303):
                location = response.headers["Location"]
                if location.startswith(REDIRECT):
                    return location, verifier, state
                response = browser.get(urllib.parse.urljoin(self.base, location))
            elif response.status_code != 200:
                break
        self.fail(f"signing in did not redirect to the client: {describe(response)}")

    def code_tokens(self, session, username):
        location, verifier, state = self.authorize(session, username)
        return session.fetch_token(
            self.endpoints["token_endpoint"], authorization_response=location, code_verifier=verifier)


class OAuthConformance(OutpostCase):
    @classmethod
    def prepare(cls, server):
        for name in ("ada", "bob", "cleo", "dan", "eve"):
            server.add_user(name)
        cls.app_id, _ = server.add_client(
            "Interop app", redirect_uris=[REDIRECT], grants=["authorization_code", "refresh_token", "device_code"])
        cls.service_id, cls.service_secret = server.add_client(
            "Interop service", grants=["client_credentials"], scopes=["records:read"], confidential=True)

    def setUp(self):
        self.endpoints = self.metadata()

    def test_discovery_metadata_rfc8414(self):
        """RFC 8414 metadata passes Authlib's validation and names every endpoint this suite uses."""
        metadata = AuthorizationServerMetadata(self.endpoints)
        metadata.validate()  # every registered key's rules; http is allowed only via AUTHLIB_INSECURE_TRANSPORT
        self.assertEqual(metadata["issuer"], self.base, "the issuer must be the URL the metadata was fetched from")
        for key in ("authorization_endpoint", "token_endpoint", "revocation_endpoint", "device_authorization_endpoint"):
            self.assertTrue(metadata.get(key, "").startswith(self.base + "/"), f"{key}: {metadata.get(key)}")
        self.assertEqual(metadata["code_challenge_methods_supported"], ["S256"], "S256 only; never plain")
        grants = set(metadata["grant_types_supported"])
        for grant in ("authorization_code", "refresh_token", "client_credentials", DEVICE_GRANT):
            self.assertIn(grant, grants)
        self.assertIn("code", metadata["response_types_supported"])
        self.assertIn("client_secret_basic", metadata["token_endpoint_auth_methods_supported"])

    def test_authorization_code_pkce_s256_two_scopes(self):
        """Authlib builds the request (S256 challenge, state), checks the state on the way back and
        exchanges the code with its verifier; the token carries exactly the two scopes asked for."""
        session = self.public_session(self.app_id, scope="records:read profile")
        location, verifier, state = self.authorize(session, "ada")
        query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(location).query))
        self.assertEqual(query.get("state"), state)
        self.assertNotIn("error", query, redact(query))
        token = session.fetch_token(
            self.endpoints["token_endpoint"], authorization_response=location, code_verifier=verifier)
        self.assertEqual(token["token_type"].lower(), "bearer")
        self.assertGreater(int(token["expires_in"]), 0)
        self.assertIn("refresh_token", token)
        self.assertEqual(set(token["scope"].split()), {"records:read", "profile"})
        me = self.me(token["access_token"])
        self.assertEqual(me.status_code, 200, describe(me))
        self.assertEqual(me.json()["username"], "ada")
        self.assertEqual(set(me.json()["scope"].split()), {"records:read", "profile"})

    def test_authorization_code_wrong_verifier_refused(self):
        """A code exchanged with another PKCE verifier is invalid_grant."""
        session = self.public_session(self.app_id, scope="profile")
        location, _, _ = self.authorize(session, "ada")
        self.assertOAuthError(
            "invalid_grant", session.fetch_token, self.endpoints["token_endpoint"], authorization_response=location,
            code_verifier=secrets.token_urlsafe(48))

    def test_authorization_code_replay_refused_and_revokes(self):
        """A code presented twice: the second is invalid_grant and the first exchange's tokens die (RFC 6749 §4.1.2)."""
        session = self.public_session(self.app_id, scope="profile")
        location, verifier, _ = self.authorize(session, "ada")
        token = session.fetch_token(
            self.endpoints["token_endpoint"], authorization_response=location, code_verifier=verifier)
        self.assertEqual(self.me(token["access_token"]).status_code, 200)
        self.assertOAuthError(
            "invalid_grant", session.fetch_token, self.endpoints["token_endpoint"], authorization_response=location,
            code_verifier=verifier)
        me = self.me(token["access_token"])
        self.assertEqual(me.status_code, 401, f"the replayed code's access token still works: {describe(me)}")

    def test_client_credentials_confidential_client(self):
        """A confidential client made with `outpost clients add --confidential`: Basic and form
        authentication both work, no refresh token is issued, and a wrong secret is invalid_client."""
        for method in ("client_secret_basic", "client_secret_post"):
            with self.subTest(method=method):
                session = OAuth2Session(
                    self.service_id, self.service_secret, token_endpoint_auth_method=method, scope="records:read")
                token = session.fetch_token(self.endpoints["token_endpoint"], grant_type="client_credentials")
                self.assertEqual(token["token_type"].lower(), "bearer")
                self.assertEqual(token.get("scope"), "records:read")
                self.assertNotIn("refresh_token", token, "client credentials must not get a refresh token")
        wrong = OAuth2Session(self.service_id, "not-the-secret", token_endpoint_auth_method="client_secret_basic")
        self.assertOAuthError(
            "invalid_client", wrong.fetch_token, self.endpoints["token_endpoint"], grant_type="client_credentials")
        public = self.public_session(self.app_id)
        self.assertOAuthError(
            "unauthorized_client", public.fetch_token, self.endpoints["token_endpoint"], grant_type="client_credentials")

    def test_scopes_enforced_insufficient_scope(self):
        """A records:read token may read records but not write them: 403 insufficient_scope (RFC 6750 §3.1)."""
        session = OAuth2Session(
            self.service_id, self.service_secret, token_endpoint_auth_method="client_secret_basic", scope="records:read")
        token = session.fetch_token(self.endpoints["token_endpoint"], grant_type="client_credentials")
        headers = {"Authorization": f"Bearer {token['access_token']}"}
        read = requests.get(self.base + "/records/interop", headers=headers, timeout=30)
        self.assertEqual(read.status_code, 200, describe(read))
        write = requests.post(self.base + "/records/interop", json={"n": 1}, headers=headers, timeout=30)
        self.assertEqual(write.status_code, 403, f"a records:read token wrote a record: {describe(write)}")
        self.assertIn("insufficient_scope", write.headers.get("WWW-Authenticate", "") + write.text)

    def test_refresh_rotation_and_reuse_detection(self):
        """Each refresh answers a new refresh token; a rotated one presented again within the grace
        window gets the same new pair; once that pair has moved on, it fails and ends the family."""
        session = self.public_session(self.app_id, scope="profile")
        first = dict(self.code_tokens(session, "bob"))
        second = dict(session.refresh_token(self.endpoints["token_endpoint"], refresh_token=first["refresh_token"]))
        self.assertNotEqual(second["refresh_token"], first["refresh_token"], "the refresh token did not rotate")
        self.assertNotEqual(second["access_token"], first["access_token"])
        self.assertEqual(second["scope"], "profile", "a refresh must keep the granted scope")
        self.assertEqual(self.me(second["access_token"]).status_code, 200)

        # Another process of the same app spent the same token a moment later: the same pair.
        again = dict(self.public_session(self.app_id).refresh_token(
            self.endpoints["token_endpoint"], refresh_token=first["refresh_token"]))
        self.assertEqual(again["refresh_token"], second["refresh_token"])
        self.assertEqual(again["access_token"], second["access_token"])

        third = dict(session.refresh_token(self.endpoints["token_endpoint"], refresh_token=second["refresh_token"]))
        replay = self.public_session(self.app_id)
        self.assertOAuthError(
            "invalid_grant", replay.refresh_token, self.endpoints["token_endpoint"], refresh_token=first["refresh_token"])
        # Reuse is theft: the whole family is revoked, the newest tokens included.
        latest = self.public_session(self.app_id)
        self.assertOAuthError(
            "invalid_grant", latest.refresh_token, self.endpoints["token_endpoint"], refresh_token=third["refresh_token"])
        me = self.me(third["access_token"])
        self.assertEqual(me.status_code, 401, f"the family's access token survived reuse: {describe(me)}")
        self.assertIn("invalid_token", me.headers.get("WWW-Authenticate", ""))

    def test_revocation_rfc7009(self):
        """Revoking an access token ends it at once; revoking a refresh token ends its family."""
        session = self.public_session(self.app_id, scope="profile")
        token = dict(self.code_tokens(session, "cleo"))
        response = session.revoke_token(
            self.endpoints["revocation_endpoint"], token=token["access_token"], token_type_hint="access_token")
        self.assertEqual(response.status_code, 200, describe(response))
        self.assertEqual(self.me(token["access_token"]).status_code, 401)

        token = dict(self.code_tokens(self.public_session(self.app_id, scope="profile"), "cleo"))
        response = session.revoke_token(
            self.endpoints["revocation_endpoint"], token=token["refresh_token"], token_type_hint="refresh_token")
        self.assertEqual(response.status_code, 200, describe(response))
        self.assertOAuthError(
            "invalid_grant", session.refresh_token, self.endpoints["token_endpoint"], refresh_token=token["refresh_token"])
        self.assertEqual(self.me(token["access_token"]).status_code, 401, "the family's access token survived")
        # An unknown token is not an error (RFC 7009 §2.2).
        response = session.revoke_token(self.endpoints["revocation_endpoint"], token="opa_" + secrets.token_urlsafe(32))
        self.assertEqual(response.status_code, 200, describe(response))

    def test_device_grant_pending_slow_down_approved(self):
        """RFC 8628 through Authlib's token request: authorization_pending, slow_down when polled
        too fast, tokens once the person allows it on /device, and the code works only once."""
        start = requests.post(
            self.endpoints["device_authorization_endpoint"], data={"client_id": self.app_id, "scope": "records:read profile"},
            timeout=30)
        self.assertEqual(start.status_code, 200, describe(start))
        grant = start.json()
        for key in ("device_code", "user_code", "verification_uri", "expires_in", "interval"):
            self.assertIn(key, grant)
        self.assertEqual(grant["verification_uri"], self.base + "/device")
        session = self.public_session(self.app_id)
        poll = dict(url=self.endpoints["token_endpoint"], grant_type=DEVICE_GRANT, device_code=grant["device_code"])
        self.assertOAuthError("authorization_pending", session.fetch_token, **poll)
        self.assertOAuthError("slow_down", session.fetch_token, **poll)

        browser = FormBrowser(self.base)
        page = browser.get(grant.get("verification_uri_complete") or grant["verification_uri"])
        self.assertEqual(page.status_code, 200, describe(page))
        for _ in range(3):  # code and sign-in, then a confirmation step if the server has one
            page = browser.submit(
                page, {"user_code": grant["user_code"], "username": "dan", "password": PASSWORD}, decision="allow")
            if page.status_code in (302, 303):
                page = browser.get(urllib.parse.urljoin(self.base, page.headers["Location"]))
            self.assertEqual(page.status_code, 200, describe(page))
            if not [form for form in parse_page(page.text).forms if form["method"] == "post"]:
                break
        token = session.fetch_token(**poll)
        self.assertIn("access_token", token)
        me = self.me(token["access_token"])
        self.assertEqual(me.status_code, 200, describe(me))
        self.assertEqual(me.json()["username"], "dan")
        self.assertOAuthError("invalid_grant", session.fetch_token, **poll)


class OpenIDConnect(OutpostCase):
    """The parts the `oidc` branch adds: discovery, id_token signed with a key in the JWKS, /userinfo."""

    @classmethod
    def prepare(cls, server):
        server.add_user("fay")
        cls.app_id, _ = server.add_client(
            "Interop OIDC app", redirect_uris=[REDIRECT], grants=["authorization_code", "refresh_token"],
            scopes=["openid", "profile", "records:read"])

    def setUp(self):
        response = requests.get(self.base + "/.well-known/openid-configuration", timeout=30)
        self.assertEqual(response.status_code, 200, f"no OpenID Connect discovery: {describe(response)}")
        self.endpoints = response.json()

    def test_openid_configuration(self):
        """OpenID Provider metadata passes Authlib's validation and matches the RFC 8414 document."""
        from authlib.oidc.discovery import OpenIDProviderMetadata
        metadata = OpenIDProviderMetadata(self.endpoints)
        metadata.validate()
        self.assertEqual(metadata["issuer"], self.base)
        self.assertIn("code", metadata["response_types_supported"])
        self.assertIn("openid", metadata.get("scopes_supported", ["openid"]))
        oauth = self.metadata()
        self.assertEqual(oauth["issuer"], metadata["issuer"])
        self.assertEqual(oauth["token_endpoint"], metadata["token_endpoint"])
        jwks = requests.get(metadata["jwks_uri"], timeout=30)
        self.assertEqual(jwks.status_code, 200, describe(jwks))
        self.assertTrue(jwks.json().get("keys"), "the JWKS has no keys")
        for key in jwks.json()["keys"]:
            self.assertFalse({"d", "p", "q", "dp", "dq", "qi", "k"} & set(key), "the JWKS publishes private key material")

    def test_id_token_verified_with_jwks(self):
        """The code flow with scope openid returns an id_token that joserfc verifies against the
        server's JWKS, with Authlib's OIDC claim rules (iss, aud, exp, iat, nonce, at_hash)."""
        from authlib.oidc.core import CodeIDToken
        from joserfc import jwt
        from joserfc.errors import JoseError
        from joserfc.jwk import KeySet

        nonce = secrets.token_urlsafe(16)
        session = self.public_session(self.app_id, scope="openid")  # one scope: "+" decoding is another test's
        location, verifier, _ = self.authorize(session, "fay", extra={"nonce": nonce})
        token = session.fetch_token(
            self.endpoints["token_endpoint"], authorization_response=location, code_verifier=verifier)
        self.assertIn("id_token", token, "no id_token for scope openid")
        keys = KeySet.import_key_set(requests.get(self.endpoints["jwks_uri"], timeout=30).json())
        algorithms = self.endpoints.get("id_token_signing_alg_values_supported") or ["RS256"]
        self.assertNotIn("none", algorithms)
        verified = jwt.decode(token["id_token"], keys, algorithms=algorithms)
        self.assertIn(verified.header.get("alg"), algorithms)

        registry = jwt.JWTClaimsRegistry(
            iss={"essential": True, "value": self.base}, aud={"essential": True, "value": self.app_id},
            sub={"essential": True}, exp={"essential": True}, iat={"essential": True},
            nonce={"essential": True, "value": nonce})
        registry.validate(verified.claims)
        claims = CodeIDToken(
            verified.claims, verified.header, params={"nonce": nonce, "client_id": self.app_id,
                                                      "access_token": token["access_token"]})
        claims.validate(leeway=30)

        # The signature really is checked: a changed payload, and an unsigned copy, are refused.
        header, payload, signature = token["id_token"].split(".")
        flipped = payload[:-2] + ("A" if payload[-2] != "A" else "B") + payload[-1]
        unsigned = base64.urlsafe_b64encode(b'{"alg":"none"}').rstrip(b"=").decode()
        for forged in (".".join([header, flipped, signature]), ".".join([unsigned, payload, ""])):
            with self.assertRaises(JoseError):
                jwt.decode(forged, keys, algorithms=algorithms)

        # A refresh answers a new id_token for the same person and client (OIDC Core §12.2).
        refreshed = session.refresh_token(self.endpoints["token_endpoint"], refresh_token=token["refresh_token"])
        if "id_token" in refreshed:
            again = jwt.decode(refreshed["id_token"], keys, algorithms=algorithms)
            self.assertEqual(again.claims["sub"], verified.claims["sub"])
            self.assertEqual(again.claims["aud"], verified.claims["aud"])
            self.assertEqual(again.claims["iss"], verified.claims["iss"])
        token = refreshed

        userinfo = requests.get(
            self.endpoints["userinfo_endpoint"], headers={"Authorization": f"Bearer {token['access_token']}"}, timeout=30)
        self.assertEqual(userinfo.status_code, 200, describe(userinfo))
        self.assertEqual(userinfo.json().get("sub"), verified.claims["sub"])

    def test_no_id_token_without_openid_scope(self):
        """Plain OAuth sign-ins (no openid scope) get no id_token."""
        session = self.public_session(self.app_id, scope="records:read")
        token = self.code_tokens(session, "fay")
        self.assertNotIn("id_token", token)


if __name__ == "__main__":
    harness.run_suite("authlib interop", globals())
