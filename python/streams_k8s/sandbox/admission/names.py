"""The identifier formats of the Kubernetes API (apimachinery's util/validation), each returning the
API server's messages for a value that breaks it (empty when the value is valid)."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable

_QNAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QNAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character"
)
_LABEL_VALUE_FMT = f"({_QNAME_FMT})?"
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
    "start and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + r"(\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)
_DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_LABEL_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character"
)
_CONFIG_KEY_FMT = "[-._a-zA-Z0-9]+"
_CONFIG_KEY_MSG = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"
_ENV_NAME_MSG = (
    "a valid environment variable name must consist only of printable ASCII characters other than '='"
)

_QNAME = re.compile(f"^{_QNAME_FMT}$")
_LABEL_VALUE = re.compile(f"^{_LABEL_VALUE_FMT}$")
_DNS1123_LABEL = re.compile(f"^{_DNS1123_LABEL_FMT}$")
_DNS1123_SUBDOMAIN = re.compile(f"^{_DNS1123_SUBDOMAIN_FMT}$")
_DNS1035_LABEL = re.compile(f"^{_DNS1035_LABEL_FMT}$")
_CONFIG_KEY = re.compile(f"^{_CONFIG_KEY_FMT}$")
_PORT_NAME_CHARS = re.compile("^[-a-z0-9]+$")
_ONE_LETTER = re.compile("[a-z]")

LABEL_MAX = 63
SUBDOMAIN_MAX = 253
MAX_INT32 = 2**31 - 1  # the largest int32 field value

NameCheck = Callable[[str, bool], list[str]]
"""A kind's name rule: (name, is a generateName prefix) -> messages."""


def max_len_error(limit: int) -> str:
    return f"must be no more than {limit} characters"


def max_bytes_error(limit: int) -> str:
    """What apimachinery's `validate/content` says of a label key or value too long (1.34+)."""
    return f"must be no more than {limit} bytes"


def empty_error() -> str:
    return "must be non-empty"


def inclusive_range_error(low: int, high: int) -> str:
    return f"must be between {low} and {high}, inclusive"


def regex_error(message: str, fmt: str, *examples: str) -> str:
    if not examples:
        return f"{message} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{message} (e.g. {shown}regex used for validation is '{fmt}')"


def _byte_len(value: str) -> int:
    return len(value.encode())


def dns1123_label(value: str) -> list[str]:
    errors = []
    if _byte_len(value) > LABEL_MAX:
        errors.append(max_len_error(LABEL_MAX))
    if not _DNS1123_LABEL.match(value):
        if _DNS1123_SUBDOMAIN.match(value):
            errors.append("must not contain dots")
        else:
            errors.append(regex_error(_DNS1123_LABEL_MSG, _DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errors


def dns1123_subdomain(value: str, too_long: Callable[[int], str] = max_len_error) -> list[str]:
    errors = []
    if _byte_len(value) > SUBDOMAIN_MAX:
        errors.append(too_long(SUBDOMAIN_MAX))
    if not _DNS1123_SUBDOMAIN.match(value):
        errors.append(regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errors


def dns1035_label(value: str) -> list[str]:
    errors = []
    if _byte_len(value) > LABEL_MAX:
        errors.append(max_len_error(LABEL_MAX))
    if not _DNS1035_LABEL.match(value):
        errors.append(regex_error(_DNS1035_LABEL_MSG, _DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errors


def qualified_name(value: str) -> list[str]:
    """A label key, annotation key or finalizer: `[prefix/]name`, prefix a DNS subdomain (as
    apimachinery's `validate/content.IsLabelKey` words it)."""
    errors: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errors.append("prefix part " + empty_error())
        else:
            errors += ["prefix part " + m for m in dns1123_subdomain(prefix, max_bytes_error)]
    else:
        return [
            "a valid label key "
            + regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errors.append("name part " + empty_error())
    elif _byte_len(name) > LABEL_MAX:
        errors.append("name part " + max_bytes_error(LABEL_MAX))
    if not _QNAME.match(name):
        errors.append("name part " + regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc"))
    return errors


def label_value(value: str) -> list[str]:
    errors = []
    if _byte_len(value) > LABEL_MAX:
        errors.append(max_bytes_error(LABEL_MAX))
    if not _LABEL_VALUE.match(value):
        errors.append(regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errors


def port_name(value: str) -> list[str]:
    """IANA_SVC_NAME: what a container port's name (and a named targetPort) must be."""
    errors = []
    if len(value) > 15:
        errors.append(max_len_error(15))
    if not _PORT_NAME_CHARS.match(value):
        errors.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not _ONE_LETTER.search(value):
        errors.append("must contain at least one letter (a-z)")
    if "--" in value:
        errors.append("must not contain consecutive hyphens")
    if value and (value[0] == "-" or value[-1] == "-"):
        errors.append("must not begin or end with a hyphen")
    return errors


def port_number(value: int) -> list[str]:
    return [] if 1 <= value <= 65535 else [inclusive_range_error(1, 65535)]


def env_var_name(value: str) -> list[str]:
    """Environment variable names as Kubernetes 1.32+ accepts them (RelaxedEnvironmentVariableValidation)."""
    errors = []
    if not value:
        errors.append("environment variable name " + empty_error())
    if any(not 32 <= ord(c) <= 126 or c == "=" for c in value):
        errors.append(_ENV_NAME_MSG)
    return errors


def config_map_key(value: str) -> list[str]:
    errors = []
    if _byte_len(value) > SUBDOMAIN_MAX:
        errors.append(max_len_error(SUBDOMAIN_MAX))
    if not _CONFIG_KEY.match(value):
        errors.append(regex_error(_CONFIG_KEY_MSG, _CONFIG_KEY_FMT, "key.name", "KEY_NAME", "key-name"))
    if value == ".":
        errors.append("must not be '.'")
    elif value == "..":
        errors.append("must not be '..'")
    elif value.startswith(".."):
        errors.append("must not start with '..'")
    return errors


def path_segment(value: str, prefix: bool = False) -> list[str]:
    """A name that must be one URL path segment (RBAC objects)."""
    if not prefix and value in (".", ".."):
        return [f"may not be '{value}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in value]


def ip_address(value: str) -> list[str]:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return ["must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"]
    return []


def cidr(value: str) -> list[str]:
    try:
        ipaddress.ip_network(value, strict=False)
    except ValueError:
        return ["must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"]
    if "/" not in value:
        return ["must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"]
    return []


def _mask_trailing_dash(value: str) -> str:
    """generateName prefixes may end in '-' (the random suffix follows)."""
    return value[:-1] + "a" if len(value) > 1 and value.endswith("-") else value


def name_is_dns_subdomain(name: str, prefix: bool) -> list[str]:
    return dns1123_subdomain(_mask_trailing_dash(name) if prefix else name)


def name_is_dns_label(name: str, prefix: bool) -> list[str]:
    return dns1123_label(_mask_trailing_dash(name) if prefix else name)


def name_is_dns1035_label(name: str, prefix: bool) -> list[str]:
    return dns1035_label(_mask_trailing_dash(name) if prefix else name)


def name_is_path_segment(name: str, prefix: bool) -> list[str]:
    return path_segment(name, prefix)
