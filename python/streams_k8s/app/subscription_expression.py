"""Property-based import subscriptions: the SPL Import operator's ``subscription`` expressions.

An Export by properties publishes typed properties (``rstring``, ``int64``, ``float64`` and lists
of them, e.g. ``{kind="bargains", tickers=["IBM", "GOOG"], rank=3}``); an Import subscribes with
a boolean expression over them. The grammar, as IBM Streams documents it for the ``subscription``
parameter (whitespace is free; ``&&`` binds tighter than ``||``):

    subscription := disjunction
    disjunction  := conjunction ( "||" conjunction )*
    conjunction  := primary ( "&&" primary )*
    primary      := "(" disjunction ")" | predicate
    predicate    := operand CMP literal          e.g. kind == "bargains", rank >= 2
                  | literal "in" NAME            e.g. "IBM" in tickers (list membership)
    operand      := NAME                         a scalar property
                  | NAME "[" INT "]"             an element of a list property
                  | NAME "%" INT                 an int64 property modulo a positive constant
    CMP          := "==" | "!=" | "<" | "<=" | ">" | ">="
    literal      := STRING | ["-"] INT | ["-"] FLOAT

Strings are double-quoted with backslash escapes; numbers compare with numbers (int64 with
float64) and strings with strings (``<`` is lexicographic). A predicate on a property the export
does not have, of another type, or out of a list's range is false: a subscription only matches
streams whose properties satisfy it. A malformed expression is a `SubscriptionError` naming the
position, raised by `parse_subscription`, never at matching time.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

Scalar = str | int | float
Value = Scalar | tuple[Scalar, ...]


class StreamProperty(Protocol):
    """A property of an exported stream (an Export's, `api.import_export.StreamProperty`)."""

    @property
    def name(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def values(self) -> Sequence[str]: ...


class SubscriptionError(ValueError):
    """A subscription expression that does not follow the grammar."""


_TOKEN = re.compile(
    r"""\s*(?:
    (?P<string>"(?:[^"\\]|\\.)*")
  | (?P<number>-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>==|!=|<=|>=|&&|\|\||[<>()\[\]%])
    )""",
    re.VERBOSE,
)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "0": "\0"}
_COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def _unquote(literal: str) -> str:
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), literal[1:-1])


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # string | number | name | op | end
    text: str
    at: int


def _tokens(text: str) -> list[_Token]:
    out: list[_Token] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        match = _TOKEN.match(text, pos)
        if match is None or match.lastgroup is None:
            offending = text[pos:].lstrip()[:1]
            raise SubscriptionError(f"unexpected character {offending!r} at position {pos + 1}")
        at = match.start(match.lastgroup)
        out.append(_Token(match.lastgroup, match.group(match.lastgroup), at))
        pos = match.end()
    out.append(_Token("end", "", len(text)))
    return out


def _comparable(a: Scalar, b: Scalar) -> bool:
    return isinstance(a, str) == isinstance(b, str)


@dataclass(frozen=True, slots=True)
class _Compare:
    name: str
    index: int | None  # NAME[INT]
    modulo: int | None  # NAME % INT
    op: str
    literal: Scalar

    def __call__(self, props: Mapping[str, Value]) -> bool:
        value = props.get(self.name)
        if value is None:
            return False
        if self.index is not None:
            if not isinstance(value, tuple) or self.index >= len(value):
                return False
            value = value[self.index]
        if isinstance(value, tuple):
            return False
        if self.modulo is not None:
            if not isinstance(value, int):
                return False
            value = value % self.modulo
        return _comparable(value, self.literal) and bool(_COMPARE[self.op](value, self.literal))


@dataclass(frozen=True, slots=True)
class _In:
    literal: Scalar
    name: str

    def __call__(self, props: Mapping[str, Value]) -> bool:
        value = props.get(self.name)
        return isinstance(value, tuple) and any(
            _comparable(v, self.literal) and v == self.literal for v in value
        )


@dataclass(frozen=True, slots=True)
class _Any:
    terms: tuple[Predicate, ...]

    def __call__(self, props: Mapping[str, Value]) -> bool:
        return any(t(props) for t in self.terms)


@dataclass(frozen=True, slots=True)
class _All:
    terms: tuple[Predicate, ...]

    def __call__(self, props: Mapping[str, Value]) -> bool:
        return all(t(props) for t in self.terms)


Predicate = _Compare | _In | _Any | _All


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = _tokens(text)
        self.pos = 0

    @property
    def current(self) -> _Token:
        return self.tokens[self.pos]

    def _fail(self, expected: str) -> SubscriptionError:
        token = self.current
        found = "the end" if token.kind == "end" else repr(token.text)
        return SubscriptionError(f"expected {expected} at position {token.at + 1}, found {found}")

    def _take(self, kind: str, text: str | None = None) -> _Token | None:
        token = self.current
        if token.kind == kind and (text is None or token.text == text):
            self.pos += 1
            return token
        return None

    def _expect(self, kind: str, what: str, text: str | None = None) -> _Token:
        token = self._take(kind, text)
        if token is None:
            raise self._fail(what)
        return token

    def parse(self) -> Predicate:
        result = self._disjunction()
        if self.current.kind != "end":
            raise self._fail("'&&', '||' or the end")
        return result

    def _disjunction(self) -> Predicate:
        terms = [self._conjunction()]
        while self._take("op", "||"):
            terms.append(self._conjunction())
        return terms[0] if len(terms) == 1 else _Any(tuple(terms))

    def _conjunction(self) -> Predicate:
        terms = [self._primary()]
        while self._take("op", "&&"):
            terms.append(self._primary())
        return terms[0] if len(terms) == 1 else _All(tuple(terms))

    def _primary(self) -> Predicate:
        if self._take("op", "("):
            inner = self._disjunction()
            self._expect("op", "')'", ")")
            return inner
        if self.current.kind in ("string", "number"):
            literal = self._literal()
            self._expect("name", "'in'", "in")
            return _In(literal, self._expect("name", "a list property name").text)
        name = self._expect("name", "a property name, a literal or '('").text
        index = modulo = None
        if self._take("op", "["):
            index = self._integer("a list index")
            self._expect("op", "']'", "]")
        elif self._take("op", "%"):
            modulo = self._integer("a modulus")
            if modulo == 0:
                raise SubscriptionError(f"modulus of '{name}' must not be 0")
        op = self.current.text if self.current.kind == "op" else ""
        if op not in _COMPARE:
            raise self._fail("a comparison (==, !=, <, <=, >, >=)")
        self.pos += 1
        return _Compare(name, index, modulo, op, self._literal())

    def _integer(self, what: str) -> int:
        token = self._expect("number", what)
        if not token.text.isdigit():
            raise SubscriptionError(f"{what} must be a non-negative integer at position {token.at + 1}")
        return int(token.text)

    def _literal(self) -> Scalar:
        token = self.current
        if token.kind == "string":
            self.pos += 1
            return _unquote(token.text)
        if token.kind == "number":
            self.pos += 1
            return _number(token.text)
        raise self._fail("a string or number literal")


def _number(text: str) -> int | float:
    return float(text) if any(c in text for c in ".eE") else int(text)


@dataclass(frozen=True, slots=True)
class Subscription:
    """A parsed subscription expression; `matches` tests an export's properties."""

    text: str
    predicate: Predicate

    def matches(self, properties: Sequence[StreamProperty] | Mapping[str, Value]) -> bool:
        """Over an export's properties, or their `property_values` (computed once per export)."""
        values = properties if isinstance(properties, Mapping) else property_values(properties)
        return self.predicate(values)


def parse_subscription(text: str) -> Subscription:
    """The subscription ``text`` means; `SubscriptionError` if it does not follow the grammar."""
    if not text.strip():
        raise SubscriptionError("the subscription is empty")
    return Subscription(text, _Parser(text).parse())


def _spl_value(kind: str, literal: str) -> Scalar:
    """An exported property value as the ADL and the runtime write it (SPL literal syntax)."""
    text = literal.strip()
    if kind.startswith(("rstring", "ustring")):
        return _unquote(text) if len(text) >= 2 and text[0] == text[-1] == '"' else text
    number = text.rstrip("lLsSbBhHuUwdfWDF") if kind.startswith(("int", "uint", "float")) else text
    try:
        return float(number) if kind.startswith("float") else int(number)
    except ValueError:
        return text  # not what its type says: it matches no numeric predicate


def property_values(properties: Sequence[StreamProperty]) -> dict[str, Value]:
    """Typed values by name: a list property gives a tuple, any other its single value."""
    out: dict[str, Value] = {}
    for prop in properties:
        kind = prop.type.replace(" ", "")
        if kind.startswith("list<") and kind.endswith(">"):
            out[prop.name] = tuple(_spl_value(kind[5:-1], v) for v in prop.values)
        elif prop.values:
            out[prop.name] = _spl_value(kind, prop.values[0])
    return out
