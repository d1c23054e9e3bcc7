"""Counts of what makes the code hard to live in (issue 54's measures), for one checkout or
two side by side: two-way import pairs among train/'s subpackages, source files that spell an
evaluation setting or a verdict word literally, test modules that import private modules,
imports inside functions, lines of lazy-loading stubs, and the longest module.

    python benchmarks/structure.py                 # this checkout
    python benchmarks/structure.py --vs ../old     # another checkout beside it
"""

from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path

FOLDERS = ("hscale", "design", "harness", "train", "analysis")
SETTING_WORDS = ("in_space", "out_of_space", "neighbours")
VERDICT_WORDS = ("consistent", "mixed", "not resolved")


def sources(root: Path) -> list[Path]:
    """Every project source file once (rglob does not follow hscale/'s links to the layout's
    folders)."""
    return sorted(p for folder in FOLDERS for p in (root / folder).rglob("*.py")
                  if "__pycache__" not in p.parts)


def _code(path: Path) -> str:
    """A source file's text without a package's ``__all__`` list (a function may be named
    like a setting word, ``neighbours``)."""
    return re.sub(r"^__all__ = \[.*?^\]", "", path.read_text(), flags=re.M | re.S)


def _imports(tree: ast.AST) -> list[tuple[ast.AST, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append((node, node.module))
        elif isinstance(node, ast.Import):
            found += [(node, a.name) for a in node.names]
    return found


def in_function_imports(tree: ast.AST) -> int:
    count = 0
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            count += sum(isinstance(n, (ast.Import, ast.ImportFrom)) for n in ast.walk(node))
    return count


def train_pairs(root: Path) -> int:
    """Pairs of train/ subpackages that import each other, at any depth of the code."""
    edges = set()
    for path in (root / "train").rglob("*.py"):
        mine = path.relative_to(root / "train").parts[0]
        for _, module in _imports(ast.parse(path.read_text())):
            parts = module.split(".")
            if parts[:2] == ["hscale", "train"] and len(parts) > 2 and parts[2] != mine:
                edges.add((mine, parts[2]))
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level >= 2 and node.module:
                edges.add((mine, node.module.split(".")[0]))
    return sum((b, a) in edges for a, b in edges) // 2


def counts(root: Path) -> dict[str, int]:
    files = sources(root)
    trees = {p: ast.parse(p.read_text()) for p in files}
    literal = {w: re.compile(rf"[\"']{re.escape(w)}[\"']") for w in (*SETTING_WORDS,
                                                                       *VERDICT_WORDS)}
    private = re.compile(r"^\s*(from|import)\s+hscale(\.\w+)*\._\w+", re.M)
    tests = [p for p in (root / "tests").rglob("test_*.py")]
    return {
        "two-way pairs in train/": train_pairs(root),
        "files spelling a setting": sum(any(literal[w].search(_code(p)) for w in SETTING_WORDS)
                                        for p in files),
        "files spelling a verdict": sum(any(literal[w].search(_code(p)) for w in VERDICT_WORDS)
                                        for p in files),
        "test modules importing private modules": sum(bool(private.search(p.read_text()))
                                                      for p in tests),
        "test modules": len(tests),
        "imports inside functions": sum(in_function_imports(t) for t in trees.values()),
        "files with one": sum(in_function_imports(t) > 0 for t in trees.values()),
        "stub (.pyi) lines": sum(len(p.read_text().splitlines()) for f in FOLDERS
                                 for p in (root / f).rglob("*.pyi")),
        "longest module (lines)": max(len(p.read_text().splitlines()) for p in files),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vs", type=Path, help="another checkout to count beside this one")
    args = parser.parse_args()
    here = counts(Path(__file__).resolve().parents[1])
    there = counts(args.vs.resolve()) if args.vs else None
    width = max(map(len, here))
    print(f"{'':{width}}  {'this':>6}" + (f"  {'--vs':>6}" if there else ""))
    for key, value in here.items():
        print(f"{key:{width}}  {value:>6}" + (f"  {there[key]:>6}" if there else ""))


if __name__ == "__main__":
    main()
