"""The job's transport certificate: what PEs use when `transportSecurityType` is TLSv1.2.

A self-signed RSA-2048 certificate signed with SHA-256, subject `CN=Streams, L=NewYork, C=US`,
as the runtime expects, valid for `transportCertificateValidityInDays`.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

from streams_k8s.api.job import Job
from streams_k8s.api.processing_element import TransportSecurityType


def transport_certificate(validity_days: int, now: datetime | None = None) -> tuple[str, str]:
    """(certificate PEM, private key PEM) of a fresh self-signed transport certificate."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.COMMON_NAME, "Streams"),
            x509.NameAttribute(NameOID.LOCALITY_NAME, "NewYork"),
            x509.NameAttribute(NameOID.COUNTRY_NAME, "US"),
        ]
    )
    start = now or datetime.now(UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + timedelta(days=validity_days))
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return certificate.public_bytes(serialization.Encoding.PEM).decode(), key_pem.decode()


def needs_transport_certificate(job: Job) -> bool:
    return job.spec.processing_element.transport_security_type is TransportSecurityType.TLS_V1_2
