"""MkDocs hook: the reference pages are generated from the code at every build (the spec's
models, the command-line code, the file contracts, each package's ``__all__``), so they
cannot drift from what hscale accepts."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("design", "harness", "train", "analysis", "contracts")


def pages() -> dict[str, str]:
    """Site path -> Markdown of every generated page."""
    from hscale.cli._reference import cli_reference
    from hscale.contracts._reference import contracts_reference
    from hscale.train.spec._reference import spec_reference

    out = {"reference/spec.md": spec_reference(ROOT / "experiments"),
           "reference/cli.md": cli_reference(),
           "reference/contracts.md": contracts_reference()}
    for name in PACKAGES:
        out[f"reference/api/{name}.md"] = api_page(name)
    return out


def api_page(name: str) -> str:
    """One package's public API: every name of its ``__all__``, documented from its code:
    classes and functions by mkdocstrings, constants and registries in a table of values."""
    import importlib
    import inspect

    module = importlib.import_module(f"hscale.{name}")
    names = sorted(getattr(module, "__all__", []), key=str.lower)
    doc = (module.__doc__ or "").strip().split("\n\n")[0]
    documented = [n for n in names if inspect.isclass(getattr(module, n))
                  or inspect.isroutine(getattr(module, n))]
    values = [n for n in names if n not in documented]
    out = [f"# `hscale.{name}`", "", doc, "",
           f"The package's public API: the {len(names)} names of its `__all__`, "
           f"{len(documented)} classes and functions, then {len(values)} constants and "
           "registries.", ""]
    out += [f"::: hscale.{name}.{n}\n" for n in documented]
    if values:
        out += ["## Constants and registries", "", "| name | value |", "|---|---|"]
        out += [f"| `{n}` | {_value(getattr(module, n))} |" for n in values]
    return "\n".join(out) + "\n"


def _value(value) -> str:
    text = repr(value)
    text = text if len(text) <= 120 else text[:117] + "..."
    return "`" + text.replace("|", "\\|").replace("`", "'").replace("\n", " ") + "`"


def on_files(files, config):
    from mkdocs.structure.files import File

    for path, text in pages().items():
        files.append(File.generated(config, path, content=text))
    return files


ROLE = re.compile(r":(?:func|class|data|meth|mod|attr|exc|obj):<code>(~?)([^<]*)</code>")


def plain_roles(html: str) -> str:
    """Sphinx cross-reference roles in docstrings (``:func:`name```) as the code they name:
    mkdocstrings renders them as written, ':func:' and all (``~a.b.C`` shows as ``C``)."""
    return ROLE.sub(lambda m: f"<code>{m[2].rsplit('.', 1)[-1] if m[1] else m[2]}</code>",
                    html)


def on_page_content(html, page, config, files):
    return plain_roles(html)
