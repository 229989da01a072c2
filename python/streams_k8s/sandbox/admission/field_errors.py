"""Field errors worded as kube-apiserver words them (`field: Invalid value: "x": detail`), collected
per object and turned into one 422 `causes[]` entry each."""

from __future__ import annotations

from typing import Any

import orjson

from streams_k8s.sandbox.errors import cause

Cause = dict[str, str]


def go_quote(text: str) -> str:
    """A string as Go's %q prints it (strconv.Quote): escapes for quotes, backslashes and control
    characters; printable Unicode as is."""
    out = ['"']
    for char in text:
        if char in ('"', "\\"):
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif char == "\t":
            out.append("\\t")
        elif char == "\r":
            out.append("\\r")
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\x{ord(char):02x}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


class GoJson(str):
    """A value already as the API server prints it: a Go struct through encoding/json (internal
    types without json tags print their Go field names, in declaration order)."""


def go_json(value: Any) -> str:
    """A value as Go's encoding/json marshals it: compact, map keys sorted, `<`, `>` and `&`
    escaped as it escapes them for HTML."""
    return _html_escaped(orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode())


def go_struct(**fields: Any) -> GoJson:
    """A Go struct as encoding/json marshals it: its fields in the order given (declaration order)."""
    return GoJson(_html_escaped(orjson.dumps(fields).decode()))


def _html_escaped(text: str) -> str:
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def go_value(value: Any) -> str:
    """A bad value as the API server prints it in a cause (field.Error, as of 1.37):
    strings quoted, numbers and booleans bare, anything else as JSON (maps with sorted keys; a
    struct's fields in their order through `GoJson`)."""
    if isinstance(value, GoJson):
        return str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return go_quote(value)
    return go_json(value)


def go_map(value: Any) -> str:
    """A decoded JSON value as Go's %+v prints it (`map[a:1 b:[x y]]`)."""
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_map(v)}" for k, v in sorted(value.items())) + "]"
    if isinstance(value, list):
        return "[" + " ".join(go_map(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "<nil>"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def index(path: str, i: int) -> str:
    return f"{path}[{i}]"


def key(path: str, name: str) -> str:
    return f"{path}[{name}]"


class FieldErrors(list[Cause]):
    """The causes found in one object, in the order the API server reports them. The rules
    Kubernetes has moved to declarative validation (for some kinds, as of 1.37) are reported after
    all the others, as it appends them: those go to `declarative`."""

    def __init__(self) -> None:
        super().__init__()
        self.declarative: list[Cause] = []

    def all(self) -> list[Cause]:
        return [*self, *self.declarative]

    def invalid(self, path: str, value: Any, detail: str = "") -> None:
        body = f"Invalid value: {go_value(value)}"
        self.append(cause(path, f"{body}: {detail}" if detail else body, "FieldValueInvalid"))

    def invalid_each(self, path: str, value: Any, details: list[str]) -> None:
        for detail in details:
            self.invalid(path, value, detail)

    def required(self, path: str, detail: str = "") -> None:
        self.append(
            cause(path, f"Required value: {detail}" if detail else "Required value", "FieldValueRequired")
        )

    def not_supported(self, path: str, value: Any, supported: list[str]) -> None:
        listed = ", ".join(go_quote(s) for s in supported)
        self.append(
            cause(
                path,
                f"Unsupported value: {go_value(value)}: supported values: {listed}",
                "FieldValueNotSupported",
            )
        )

    def one_of(self, path: str, value: str | None, allowed: list[str]) -> None:
        """An optional choice: unset is fine, empty is missing, else one of `allowed`."""
        if value is None:
            return
        if value == "":
            self.required(path)
        elif value not in allowed:
            self.not_supported(path, value, allowed)

    def duplicate(self, path: str, value: Any, detail: str = "") -> None:
        body = f"Duplicate value: {go_value(value)}"
        self.append(cause(path, f"{body}: {detail}" if detail else body, "FieldValueDuplicate"))

    def forbidden(self, path: str, detail: str) -> None:
        self.append(cause(path, f"Forbidden: {detail}", "FieldValueForbidden"))

    def not_found(self, path: str, value: Any) -> None:
        self.append(cause(path, f"Not found: {go_value(value)}", "FieldValueNotFound"))

    def too_long(self, path: str, limit: int) -> None:
        unit = "byte" if limit == 1 else "bytes"
        self.append(cause(path, f"Too long: may not be more than {limit} {unit}", "FieldValueTooLong"))

    def too_many(self, path: str, actual: int, limit: int) -> None:
        unit = "item" if limit == 1 else "items"
        self.append(cause(path, f"Too many: {actual}: must have at most {limit} {unit}", "FieldValueTooMany"))

    def immutable(self, path: str, value: Any) -> None:
        self.invalid(path, value, "field is immutable")
