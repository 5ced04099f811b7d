"""The package-level import graph of costart, as text: each package, the packages it
imports and how many module-to-module imports make each edge.

A node is a package directory (``placement``, ``cli.live``) or a top-level module
(``controller``, ``bootstrap``); the root ``costart/__init__.py`` is ``costart``. An edge
A -> B counts the distinct (module of A, module of B) pairs where the first imports the
second, wherever the import sits (module level, inside a function, under TYPE_CHECKING):
an import inside a function is still a dependency. Lazy public names
(``lazy_exports(__name__, {"Name": "costart.x.y"})``) count as imports too, since they
load that module on first use. Imports within one package are left out. Pairs of
packages that import each other are listed at the end.

Run: python bench/import_graph.py [--root costart] [--out FILE]
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "costart"


def module_name(path: Path, root: Path) -> str:
    """``costart/placement/step.py`` -> ``costart.placement.step``; a package's
    ``__init__.py`` is the package itself."""
    parts = [root.name, *path.relative_to(root).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def node_of(module: str, modules: dict[str, Path]) -> str:
    """The graph node a module belongs to: its package's path below the root (dots), or
    the module itself when it sits directly in the root."""
    parts = module.split(".")[1:]
    if modules[module].name != "__init__.py" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts) or module


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The longest known module that ``name`` (a dotted import target) starts with."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def _lazy_targets(call: ast.Call) -> Iterator[str]:
    """The module names of a ``lazy_exports(name, {...})`` call's mapping."""
    for arg in call.args[1:2]:
        if isinstance(arg, ast.Dict):
            for value in arg.values:
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    yield value.value


def imported_names(tree: ast.AST, module: str, is_package: bool) -> Iterator[str]:
    """Every dotted name this module imports, relative imports resolved; ``from a import
    b`` gives ``a.b`` (`_resolve` takes it back to ``a`` when ``b`` is no module)."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            yield from (f"{base}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Call):
            func = node.func
            called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if called == "lazy_exports":
                yield from _lazy_targets(node)


def module_edges(root: Path) -> tuple[dict[str, Path], set[tuple[str, str]]]:
    """Every module under ``root`` and the (importer, imported) pairs among them."""
    modules = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    edges: set[tuple[str, str]] = set()
    for module, path in modules.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        for name in imported_names(tree, module, path.name == "__init__.py"):
            target = _resolve(name, modules)
            if target is not None and target != module:
                edges.add((module, target))
    return modules, edges


def package_graph(root: Path) -> tuple[Counter[str], dict[str, Counter[str]]]:
    """Modules per node, and for each node the nodes it imports with their counts."""
    modules, edges = module_edges(root)
    sizes = Counter(node_of(m, modules) for m in modules)
    graph: dict[str, Counter[str]] = {node: Counter() for node in sizes}
    for source, target in edges:
        a, b = node_of(source, modules), node_of(target, modules)
        if a != b:
            graph[a][b] += 1
    return sizes, graph


def render(root: Path) -> str:
    """The graph as text, sorted by name so two runs diff line by line."""
    sizes, graph = package_graph(root)
    lines = [
        f"import graph of {root.name}: {sum(sizes.values())} modules in {len(sizes)} "
        f"packages, {sum(sum(c.values()) for c in graph.values())} cross-package imports",
        "(package [modules] -> imported package: module-to-module imports)",
        "",
    ]
    for node in sorted(graph):
        targets = graph[node]
        lines.append(f"{node} [{sizes[node]}]")
        if not targets:
            lines.append("  -> (nothing)")
        lines += [f"  -> {target}: {targets[target]}" for target in sorted(targets)]
    mutual = sorted(
        (a, b) for a in graph for b in graph[a] if a < b and a in graph.get(b, Counter())
    )
    lines += ["", "packages that import each other:"]
    lines += [f"  {a} <-> {b}" for a, b in mutual] or ["  (none)"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="the package directory")
    parser.add_argument("--out", type=Path, help="write here instead of stdout")
    args = parser.parse_args(argv)
    if not (args.root / "__init__.py").is_file():
        parser.error(f"--root {args.root} is not a package (no __init__.py)")
    text = render(args.root)
    if args.out:
        args.out.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
