"""The certificates of a local control plane: one CA, the API server's serving certificate, a client
certificate per component (and the admin's), and the service-account signing key pair.

Written as PEM files in one directory; the CA signs everything, so one `--client-ca-file` admits
every client certificate and one CA file lets every client trust the server. Keys are ECDSA P-256:
fast to make (a control plane starts in well under a second of key generation) and accepted by
every component, including as the service-account token signing key (ES256).
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = datetime.timedelta(days=30)
# The names a client may use for the API server: loopback, and the in-cluster names of the
# `kubernetes` Service (first address of the service range, the DNS names).
SERVER_NAMES = (
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)


@dataclass(frozen=True)
class KeyPair:
    cert: Path
    key: Path


@dataclass(frozen=True)
class Identity:
    """Who a client certificate says its holder is: the user (CN) and groups (O)."""

    user: str
    groups: tuple[str, ...] = ()


# The control plane's own clients, with the identities kube-apiserver's RBAC bootstrap expects.
ADMIN = Identity("kubernetes-admin", ("system:masters",))
CONTROLLER_MANAGER = Identity("system:kube-controller-manager")
SCHEDULER = Identity("system:kube-scheduler")
# How kube-apiserver authenticates to kubelets (logs, exec): a member of system:masters, as kubeadm's.
APISERVER_KUBELET_CLIENT = Identity("kube-apiserver-kubelet-client", ("system:masters",))


@dataclass(frozen=True)
class Pki:
    ca: KeyPair
    serving: KeyPair
    service_account_key: Path  # private (signs tokens: the API server and kube-controller-manager)
    service_account_public: Path  # public (verifies them)
    clients: dict[Identity, KeyPair]

    def client(self, identity: Identity) -> KeyPair:
        return self.clients[identity]


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> Path:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    path.chmod(0o600)
    return path


def _builder(
    subject: x509.Name, issuer: x509.Name, public: ec.EllipticCurvePublicKey
) -> x509.CertificateBuilder:
    start = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=5)  # clock skew
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public)
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + VALIDITY)
    )


class _Authority:
    def __init__(self, directory: Path) -> None:
        self.key = _key()
        self.name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "streams-k8s control plane CA")])
        self.cert = (
            _builder(self.name, self.name, self.key.public_key())
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(self.key, hashes.SHA256())
        )
        self.pair = self._write(directory, "ca", self.cert, self.key)

    @staticmethod
    def _write(
        directory: Path, stem: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey
    ) -> KeyPair:
        cert_path = directory / f"{stem}.crt"
        cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        return KeyPair(cert_path, _write_key(directory / f"{stem}.key", key))

    def issue(
        self,
        directory: Path,
        stem: str,
        subject: x509.Name,
        usage: x509.ObjectIdentifier,
        names: x509.SubjectAlternativeName | None = None,
    ) -> KeyPair:
        key = _key()
        builder = (
            _builder(subject, self.name, key.public_key())
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        )
        if names is not None:
            builder = builder.add_extension(names, critical=False)
        return self._write(directory, stem, builder.sign(self.key, hashes.SHA256()), key)


def _subject(identity: Identity) -> x509.Name:
    return x509.Name(
        [x509.NameAttribute(NameOID.ORGANIZATION_NAME, g) for g in identity.groups]
        + [x509.NameAttribute(NameOID.COMMON_NAME, identity.user)]
    )


def create_pki(directory: Path, service_ip: str, clients: tuple[Identity, ...]) -> Pki:
    """Every certificate and key of a control plane, written under `directory`.

    `service_ip` is the `kubernetes` Service's cluster IP (the first of the service range), a name
    in-cluster clients reach the API server by."""
    directory.mkdir(parents=True, exist_ok=True)
    authority = _Authority(directory)
    names = x509.SubjectAlternativeName(
        [x509.DNSName(n) for n in SERVER_NAMES]
        + [x509.IPAddress(ipaddress.ip_address(a)) for a in ("127.0.0.1", "::1", service_ip)]
    )
    serving_subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")])
    serving = authority.issue(directory, "apiserver", serving_subject, ExtendedKeyUsageOID.SERVER_AUTH, names)
    issued = {
        identity: authority.issue(
            directory, identity.user.replace(":", "-"), _subject(identity), ExtendedKeyUsageOID.CLIENT_AUTH
        )
        for identity in clients
    }
    signing = _key()
    public = directory / "service-account.pub"
    public.write_bytes(
        signing.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    private = _write_key(directory / "service-account.key", signing)
    return Pki(authority.pair, serving, private, public, issued)
