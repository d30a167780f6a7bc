"""The package graph of voxwatch as it is when modules load: which package imports which, counting
only imports that run at import time (not those inside functions, not those under TYPE_CHECKING).
A loop here means some package cannot be loaded without one above it."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path
from typing import Iterable, Mapping

Graph = Mapping[str, set[str]]


def module_names(root: Path, package: str = "voxwatch") -> dict[str, Path]:
    """Every module under `root` (the package's folder), by dotted name."""
    names = {}
    for path in sorted(root.rglob("*.py")):
        parts = [package, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def load_time_imports(path: Path) -> list[str]:
    """The modules `path` imports when it loads: `import a.b` gives a.b; `from a import b` gives a and a.b."""
    found: list[str] = []

    def visit(body: Iterable[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue  # runs when called, not when the module loads
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                visit(node.orelse)
                continue
            if isinstance(node, ast.Import):
                found.extend(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.append(node.module)
                found.extend(f"{node.module}.{alias.name}" for alias in node.names)
            for field in ("body", "orelse", "finalbody", "handlers"):
                inner = getattr(node, field, None)
                if isinstance(inner, list):
                    visit(inner)

    visit(ast.parse(path.read_text(encoding="utf-8")).body)
    return found


def package_of(module: str, depth: int = 2) -> str:
    """voxwatch.metrics.wer -> voxwatch.metrics; voxwatch.config -> voxwatch.config."""
    return ".".join(module.split(".")[:depth])


def package_graph(modules: Mapping[str, Path]) -> dict[str, set[str]]:
    """Package -> the packages its modules import at load time (itself left out)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for name, path in modules.items():
        graph[package_of(name)]
        for target in load_time_imports(path):
            if target in modules and package_of(target) != package_of(name):
                graph[package_of(name)].add(package_of(target))
    return dict(graph)


def loops(graph: Graph) -> list[list[str]]:
    """The strongly connected components of more than one package (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        component.append(top)
                        if top == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = counter
                counter += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph.get(child, ())))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found
