"""A real SMTP server (aiosmtpd) on 127.0.0.1, on a port the OS picks, for the mail sender's tests.

Every message it accepts is written to FOLDER as NNNN.json: the envelope, the raw text, and the
subject, text and HTML parts as Python's email package decodes them (an independent reading of what
the server wrote). With --tls it makes a self-signed certificate for 127.0.0.1 and localhost
(FOLDER/cert.pem), offers STARTTLS and requires it; with --auth USER:PASSWORD it requires AUTH
(PLAIN or LOGIN, over TLS only). The first line on stdout is {"port": ..., "cert": ...}; it stops when
stdin closes.

Run: python smtp_sink.py FOLDER [--tls] [--auth USER:PASSWORD]
"""

import argparse
import asyncio
import datetime
import email
import email.policy
import ipaddress
import json
import os
import ssl
import sys

from aiosmtpd.smtp import SMTP, AuthResult


def self_signed(folder):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = os.path.join(folder, "cert.pem"), os.path.join(folder, "key.pem")
    with open(cert_path, "wb") as out:
        out.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(key_path, "wb") as out:
        out.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption()))
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_path, key_path)
    return context, cert_path


class Sink:
    def __init__(self, folder):
        self.folder, self.count = folder, 0

    async def handle_DATA(self, server, session, envelope):
        raw = envelope.original_content or envelope.content
        message = email.message_from_bytes(raw, policy=email.policy.default)
        text = message.get_body(preferencelist=("plain",))
        html = message.get_body(preferencelist=("html",))
        record = {
            "mail_from": envelope.mail_from, "rcpt_tos": envelope.rcpt_tos, "raw": raw.decode("utf-8", "replace"),
            "subject": str(message["subject"]), "from": str(message["from"]), "to": str(message["to"]),
            "header_names": [name for name, _ in message.items()],
            "text": text.get_content() if text is not None else None,
            "html": html.get_content() if html is not None else None,
            "tls": session.ssl is not None, "authenticated": bool(session.authenticated),
        }
        self.count += 1
        path = os.path.join(self.folder, "%04d.json" % self.count)
        with open(path + ".part", "w") as out:
            json.dump(record, out)
        os.rename(path + ".part", path)
        return "250 Message accepted for delivery"


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("folder")
    parser.add_argument("--tls", action="store_true")
    parser.add_argument("--auth")
    arguments = parser.parse_args()
    context, cert = self_signed(arguments.folder) if arguments.tls else (None, None)
    options = {"hostname": "sink.test", "tls_context": context, "require_starttls": context is not None}
    if arguments.auth:
        user, password = arguments.auth.split(":", 1)

        def check(server, session, envelope, mechanism, auth_data):
            ok = auth_data.login == user.encode() and auth_data.password == password.encode()
            return AuthResult(success=ok, handled=False)  # a refusal answers 535

        options.update(authenticator=check, auth_required=True, auth_require_tls=True)
    sink = Sink(arguments.folder)
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: SMTP(sink, **options), "127.0.0.1", 0)
    print(json.dumps({"port": server.sockets[0].getsockname()[1], "cert": cert}), flush=True)
    await loop.run_in_executor(None, sys.stdin.read)
    server.close()


if __name__ == "__main__":
    asyncio.run(main())
