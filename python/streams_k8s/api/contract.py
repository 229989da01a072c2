"""The PE-runtime contract: every name and number the Streams runtime relies on, in one place.

The PE container (the C++ runtime) and the tools around it read these exactly as written here
(`specs/open-streams-runtime.md`, `specs/open-streams-controller.md`): label and annotation keys,
ports, mount paths, ConfigMap keys, the names of a PE's headless Service and of a job's coordinator
Service, and the name table's header. Everything that renders or reads them imports them from
here. A leaf: it imports nothing of ours.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Final

# --- labels ------------------------------------------------------------------------------------

APP_LABEL: Final = "app"
APP_VALUE: Final = "streams"  # on every object of ours
SVC_LABEL: Final = "svc"
SVC_PE: Final = "pe"  # a PE's pod (and its ConfigMap, Service and PE)
SVC_ZOMBIE: Final = "zombie"  # a failed pod kept for diagnosis: no longer its PE's pod
JOB_LABEL: Final = "streams.ibm.com/job"
PE_LABEL: Final = "streams.ibm.com/pe"
GENERATION_LABEL: Final = "streams.ibm.com/generation"
LAUNCH_COUNT_LABEL: Final = "streams.ibm.com/launch-count"
CR_LABEL: Final = "streams.ibm.com/cr"  # "true"/"false" on PEs and their pods; <job>-cr<i> on regions
# The selector of every object of ours, and of every PE pod.
STREAMS_SELECTOR: Final = f"{APP_LABEL}={APP_VALUE}"
PE_POD_SELECTOR: Final = f"{STREAMS_SELECTOR},{SVC_LABEL}={SVC_PE}"

# --- annotations -------------------------------------------------------------------------------

APPLICATION_NAME_ANNOTATION: Final = "streams.ibm.com/applicationName"
APPLICATION_SCOPE_ANNOTATION: Final = "streams.ibm.com/applicationScope"
CONTENT_ID_ANNOTATION: Final = "streams.ibm.com/contentId"  # sha256 of the PE's AADL
# On a PE's ConfigMap: the launch count of a deleted PE, continued by the PE that replaces it.
LAUNCH_COUNT_ANNOTATION: Final = LAUNCH_COUNT_LABEL
# On a PE pod: the hash of the PE settings it was made from (an edit of them replaces the pod).
POD_TEMPLATE_ANNOTATION: Final = "streams.ibm.com/podTemplate"


def token_digest(token: str) -> str:
    """Upper-case SHA-1 hex of a placement token: the suffix of its label key."""
    return hashlib.sha1(token.encode("utf-8"), usedforsecurity=False).hexdigest().upper()


def host_colocation_key(token: str) -> str:
    """The pod label of SPL ``hostColocation(token)``."""
    return f"streams.ibm.com/hostcolocation.{token_digest(token)}"


def host_exlocation_key(token: str) -> str:
    """The pod label of SPL ``hostExlocation(token)``."""
    return f"streams.ibm.com/hostexlocation.{token_digest(token)}"


def host_isolation_key(operator: str) -> str:
    """The pod label of an operator's SPL ``hostIsolation``."""
    return f"streams.ibm.com/hostisolation.{token_digest(operator)}"


# --- ports -------------------------------------------------------------------------------------

PE_PORT_BASE: Final = 10000  # PE input port I listens on TCP 10000 + I (its Service port sys-I)
METRICS_PORT: Final = 9696  # a PE's (and a coordinator's) metrics, TCP
NOTIFICATIONS_PORT: Final = 10000  # a PE's subscription-board datagrams, UDP
CONSISTENT_REGION_PORT: Final = 10001  # a PE's consistent-region notification datagrams, UDP
INSTANCE_API_PORT: Final = 10000  # the instance operator's REST API (Service streams-api)
REPOSITORY_PORT: Final = 6379  # the bundle repository PEs fetch their .sab from (redis protocol)
COORDINATOR_API_PORT: Final = 10000  # a job's consistent-region coordinator REST API
COORDINATOR_API_PORT_NAME: Final = "sys-api"

# Port names of a PE's Service. Container port names are IANA service names (at most 15
# characters, kube-apiserver's IsValidPortName): the two longer Service port names have shorter
# container twins, which the Service ports target by number.
METRICS_PORT_NAME: Final = "sys-metrics"
NOTIFICATIONS_PORT_NAME: Final = "sys-notifications"
CONSISTENT_REGION_PORT_NAME: Final = "sys-consistentregion"
NOTIFICATIONS_CONTAINER_PORT_NAME: Final = "sys-notify"
CONSISTENT_REGION_CONTAINER_PORT_NAME: Final = "sys-cr-notify"
USER_PORT_PREFIX: Final = "usr-"  # ports the runtime adds to its PE's Service (REST API endpoints)


def input_port_name(port_id: int) -> str:
    """The Service (and container) port of PE input port ``port_id``."""
    return f"sys-{port_id}"


# --- environment, mount paths and ConfigMap keys ------------------------------------------------------------

# Of the PE container's STREAMS_* variables, those read elsewhere too (the sandbox's PE runtime, a
# coordinator's tools): a pod's job and PE.
JOB_NAME_ENV: Final = "STREAMS_JOB_NAME"
PE_ID_ENV: Final = "STREAMS_PE_ID"
PE_CONFIG_DIR: Final = "/etc/config/pe"  # the PE's ConfigMap
JOB_CONFIG_DIR: Final = "/etc/config/job"  # the job's ConfigMap (and transport Secret, with TLS)
DATA_DIR: Final = "/data"
CHECKPOINT_DIR: Final = "/checkpoint"
APP_PROPERTIES_DIR: Final = "/etc/config/app"
RESTRICTED_PROPERTIES_DIR: Final = "/etc/config/restricted"
# Exact text the runtime parses for a file-system checkpoint store (at CHECKPOINT_DIR).
FILE_SYSTEM_CHECKPOINT_CONFIG: Final = f'{{ "Dir" : "{CHECKPOINT_DIR}" }}'
LIVENESS_FILE: Final = "/tmp/live"  # the PE's liveness probe: `cat` it
AADL_KEY: Final = "aadl.xml"  # in the PE's ConfigMap
NAME_TABLE_KEY: Final = "operator_port_labels.properties"  # in the job's ConfigMap
# The job's transport certificate and key (PEM) when PEs use TLS: in the job's transport Secret
# (`transport_secret_name`), projected with the job's ConfigMap into JOB_CONFIG_DIR.
TRANSPORT_CERT_KEY: Final = "transport.cert"
TRANSPORT_KEY_KEY: Final = "transport.key"

# --- names -------------------------------------------------------------------------------------


def pe_service_name(job: str, pe: int | str) -> str:
    """``<job>-<peId>``: the PE's headless Service (whose DNS A record is its pod's IP), and the
    name of its ConfigMap and ProcessingElement."""
    return f"{job}-{pe}"


def transport_secret_name(job: str) -> str:
    """``<job>-transport``: the Secret holding the job's transport certificate and private key."""
    return f"{job}-transport"


def pe_id_of(name: str) -> int:
    """The PE id in a `pe_service_name`."""
    return int(name.rsplit("-", 1)[1])


# Where a PE is reached: its headless Service in the job's namespace. A template for settings that
# let an operator point datagrams elsewhere.
PE_HOST_TEMPLATE: Final = "{job}-{pe}.{namespace}"


def pe_host(job: str, pe: int | str, namespace: str) -> str:
    """``<job>-<peId>.<namespace>``: the host name of a PE."""
    return PE_HOST_TEMPLATE.format(job=job, pe=pe, namespace=namespace)


# Where a job's PEs reach its coordinator: the Service `streams-<job>-consistentregion-api`, a name
# the runtime builds, so it can be neither shortened nor hashed.
COORDINATOR_SERVICE_AFFIXES: Final = ("streams-", "-consistentregion-api")


def coordinator_service_name(job: str) -> str:
    prefix, suffix = COORDINATOR_SERVICE_AFFIXES
    return f"{prefix}{job}{suffix}"


def coordinator_name(job: str) -> str:
    """The job's ConsistentRegionOperator, and its coordinator's Deployment and NetworkPolicy."""
    return f"{job}-consistent-region-operator"


# --- the name table ----------------------------------------------------------------------------

NAME_TABLE_HEADER: Final = "Operator port labels"
# The date line `java.util.Properties.store` writes under the header, in UTC.
NAME_TABLE_STAMP_FORMAT: Final = "%a %b %d %H:%M:%S UTC %Y"


def name_table_stamp(moment: datetime | None = None) -> str:
    """The name table's date line (without its ``#``), for ``moment`` (default: now)."""
    return (moment or datetime.now(UTC)).astimezone(UTC).strftime(NAME_TABLE_STAMP_FORMAT)
