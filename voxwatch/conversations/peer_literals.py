"""Reading a peer benchmark's Python data files without running them.

A peer (Daily's aiewf-eval) publishes its benchmarks as Python modules: `turns = [...]`, tools
built with `FunctionSchema(name=..., ...)`, a system prompt as string constants joined with `+`.
Executing someone else's module to read its data would run whatever it holds, so these files are
parsed with `ast` and only plain literals are taken (`ast.literal_eval` of each assigned value).
Imports and docstrings are skipped unread; anything else at module level, or a value that is not a
literal where a literal is needed, is refused with one line naming the file, line and name.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class PeerFileError(ValueError):
    """A peer file that is not the plain data this reader takes; the message names the file and line."""


@dataclass(frozen=True)
class Module:
    """A parsed peer file: its top-level assignments by name (the expression, not evaluated)."""

    path: Path
    shown: str  # the path as named in errors (relative to the peer's root)
    assigned: dict[str, ast.expr]
    classes: dict[str, dict[str, ast.expr]]  # class name -> its body's assignments

    def fail(self, node: ast.AST | None, message: str) -> PeerFileError:
        line = f":{node.lineno}" if node is not None and hasattr(node, "lineno") else ""
        return PeerFileError(f"{self.shown}{line}: {message}")

    def expr(self, name: str) -> ast.expr:
        if name not in self.assigned:
            raise self.fail(None, f"no top-level assignment to {name!r}")
        return self.assigned[name]

    def literal(self, name: str) -> Any:
        """The value assigned to `name`, which must be a plain literal."""
        return literal(self, self.expr(name), name)


def literal(module: Module, node: ast.expr, what: str) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise module.fail(node, f"{what} is not a plain literal ({ast.unparse(node)[:60]!r}...); "
                                "refusing to read it (peer files are parsed, never run)") from None


def _assignments(module_path: Path, shown: str, body: list[ast.stmt], where: str) -> dict[str, ast.expr]:
    out: dict[str, ast.expr] = {}
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef, ast.Pass)):
            continue  # not run, and not read: only assignments carry data
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            continue  # a docstring
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            out[node.targets[0].id] = node.value
            continue
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            out[node.target.id] = node.value
            continue
        raise PeerFileError(f"{shown}:{node.lineno}: a statement {where} that is not an import, a definition or an "
                            f"assignment ({ast.unparse(node)[:60]!r}); refusing the file (it is parsed, never run)")
    return out


def parse(path: Path, shown: str) -> Module:
    """The file's top-level assignments (and those of its classes' bodies), nothing evaluated."""
    try:
        source = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PeerFileError(f"{shown}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PeerFileError(f"{shown}: cannot read ({getattr(exc, 'strerror', None) or exc})") from None
    try:
        tree = ast.parse(source, filename=shown)
    except (SyntaxError, ValueError, RecursionError) as exc:
        raise PeerFileError(f"{shown}: not Python this reader can parse ({exc})") from None
    module = Module(path, shown, {}, {})
    module.assigned.update(_assignments(path, shown, tree.body, "at module level"))
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            module.classes[node.name] = _assignments(path, shown, node.body, f"in class {node.name}")
    return module


def call_keywords(module: Module, node: ast.expr, callee: str, what: str) -> dict[str, Any]:
    """The literal keyword arguments of `callee(k=literal, ...)`, the call itself never made."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == callee):
        raise module.fail(node, f"{what} is not a {callee}(...) call")
    if node.args:
        raise module.fail(node, f"{what}: {callee}(...) with positional arguments (keywords expected)")
    out: dict[str, Any] = {}
    for kw in node.keywords:
        if kw.arg is None:
            raise module.fail(node, f"{what}: {callee}(**...) cannot be read without running it")
        out[kw.arg] = literal(module, kw.value, f"{what}.{kw.arg}")
    return out


def name_list(module: Module, node: ast.expr, what: str) -> list[str]:
    """A list of plain names, `[a, b, c]` (each a top-level assignment of the module)."""
    if not isinstance(node, ast.List) or not all(isinstance(e, ast.Name) for e in node.elts):
        raise module.fail(node, f"{what} is not a list of names")
    names = [e.id for e in node.elts]  # type: ignore[attr-defined]
    for name in names:
        module.expr(name)
    return names


def string_sum(module: Module, node: ast.expr, what: str, names: frozenset[str] = frozenset()) -> list[str | ast.Call]:
    """`a + b + f() + c`: each term a string literal (or a name assigned one), or a call kept
    unevaluated for the caller to place; anything else is refused."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return string_sum(module, node.left, what, names) + string_sum(module, node.right, what, names)
    if isinstance(node, ast.Call):
        return [node]
    if isinstance(node, ast.Name):
        if node.id in names:
            raise module.fail(node, f"{what}: {node.id} is defined by itself")
        return string_sum(module, module.expr(node.id), what, names | {node.id})
    value = literal(module, node, what)
    if not isinstance(value, str):
        raise module.fail(node, f"{what}: a term is not a string")
    return [value]
