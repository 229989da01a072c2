"""Size rules of the house, held as a test: no module over 400 lines and no function over 80 lines
without a one-line reason in its docstring (a line starting ``Long:``).

Every module under ``python/streams_k8s/`` is parsed with ``ast``. A module's size is its line
count; a function's (methods and nested functions included) runs from its ``def`` to its last
line (decorators, such as a command's options, do not count). The rules hold for the whole
package, with no allow-list.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from repo_paths import REPO

SOURCE = REPO / "python" / "streams_k8s"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 80
REASON = re.compile(r"^\s*Long: \S", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Oversized:
    where: str  # `path` or `path:function`
    lines: int
    limit: int

    def __str__(self) -> str:
        return (
            f"{self.where}: {self.lines} lines (limit {self.limit}; a 'Long:' line in its docstring says why)"
        )


def _span(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    return (node.end_lineno or node.lineno) - node.lineno + 1


def _has_reason(node: ast.Module | ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    doc = ast.get_docstring(node, clean=False)
    return doc is not None and REASON.search(doc) is not None


def oversized(path: str, source: str) -> Iterator[Oversized]:
    """What in one module is over the limits without a reason."""
    tree = ast.parse(source, filename=path)
    lines = len(source.splitlines())
    if lines > MAX_MODULE_LINES and not _has_reason(tree):
        yield Oversized(path, lines, MAX_MODULE_LINES)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            span = _span(node)
            if span > MAX_FUNCTION_LINES and not _has_reason(node):
                yield Oversized(f"{path}:{node.name}", span, MAX_FUNCTION_LINES)


def package_oversized() -> list[Oversized]:
    found = []
    for file in sorted(SOURCE.rglob("*.py")):
        found.extend(oversized(file.relative_to(SOURCE).as_posix(), file.read_text(encoding="utf-8")))
    return found


# ---- the package keeps the rules ----


def test_no_module_or_function_is_over_the_limits_without_a_reason() -> None:
    found = package_oversized()
    assert not found, "over the size limits:\n" + "\n".join(map(str, found))


# ---- the checker finds what it must ----


def _lines(n: int) -> str:
    return "".join(f"x{i} = {i}\n" for i in range(n))


def test_a_long_module_is_found_unless_its_docstring_says_why() -> None:
    long = '"""A module."""\n' + _lines(MAX_MODULE_LINES)
    assert [str(o) for o in oversized("app/x.py", long)] == [
        f"app/x.py: {MAX_MODULE_LINES + 1} lines (limit {MAX_MODULE_LINES}; "
        "a 'Long:' line in its docstring says why)"
    ]
    explained = '"""A module.\n\nLong: one table of the spec, row by row.\n"""\n' + _lines(MAX_MODULE_LINES)
    assert list(oversized("app/x.py", explained)) == []
    assert list(oversized("app/x.py", '"""A module."""\n' + _lines(MAX_MODULE_LINES - 1))) == []


@pytest.mark.parametrize("kind", ["def", "async def"])
def test_a_long_function_is_found_unless_its_docstring_says_why(kind: str) -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    function = f"@decorator\n{kind} f():\n{body}"  # def + body: one over (decorators do not count)
    found = list(oversized("k8s/x.py", function))
    assert [(o.where, o.lines) for o in found] == [("k8s/x.py:f", MAX_FUNCTION_LINES + 1)]
    explained = f'{kind} f():\n    """Long: a state machine, one case per event."""\n{body}{body}'
    assert list(oversized("k8s/x.py", explained)) == []


def test_methods_and_nested_functions_count() -> None:
    body = "".join(f"            x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    source = f"class C:\n    def m(self):\n        def inner():\n{body}"
    assert sorted(o.where for o in oversized("consistent/x.py", source)) == [
        "consistent/x.py:inner",
        "consistent/x.py:m",
    ]


def test_a_reason_must_say_something() -> None:
    source = '"""A module.\n\nLong:\n"""\n' + _lines(MAX_MODULE_LINES)
    assert len(list(oversized("app/x.py", source))) == 1
