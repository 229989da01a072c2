"""TLS for the sandbox: a throw-away self-signed certificate for 127.0.0.1/localhost (made with
the `openssl` command), or a certificate and key the caller provides."""

from __future__ import annotations

import shutil
import ssl
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class TlsFiles:
    cert: Path
    key: Path

    def server_context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.cert, self.key)
        return context


def self_signed(directory: Path, host: str) -> TlsFiles:
    """Create a self-signed certificate valid for `host`, 127.0.0.1 and localhost."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise RuntimeError(
            "TLS needs the `openssl` command to create a certificate, or pass tls_cert/tls_key"
        )
    cert, key = directory / "sandbox.crt", directory / "sandbox.key"
    names = {"IP:127.0.0.1", "DNS:localhost", f"IP:{host}" if host[0].isdigit() else f"DNS:{host}"}
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", str(key), "-out", str(cert), "-days", "7", "-subj", "/CN=streams-sandbox",
         "-addext", f"subjectAltName={','.join(sorted(names))}",
         "-addext", "basicConstraints=critical,CA:TRUE"],
        check=True,
        capture_output=True,
    )  # fmt: skip
    key.chmod(0o600)
    return TlsFiles(cert, key)
