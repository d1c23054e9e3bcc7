"""Harness spaces: which component each factor sets and which realization each level is.

The papers' space (``S x T x O x C x W``, three realizations each) names its levels by the
realizations themselves; a space from a spec may give any registered realization, with
parameters, inline text (a ``<component>/text`` realization such as a written system
prompt) or a plugin's (a Python file or module that registers realizations, or a whole new
component kind, hscale.harness.components._extra). A :class:`HarnessSpace` turns a label into
a :class:`~hscale.harness._harness.Harness`, and is recorded in a manifest with every level's
realization and, for inline text and plugins, a content hash: a plugin edited after planning
is refused when the run loads it.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cache, cached_property
from pathlib import Path
from typing import Any

from hscale.design import Factor, FactorSpace
from hscale.errors import HscaleError
from hscale.harness._plugin_probe import probe
from hscale.harness._space import (
    BASE,
    COMPONENTS,
    COMPONENTS_OF_THE_PAPERS,
    FACTOR_COMPONENTS,
)

REPLAN = "re-plan the run (hscale plan --force) to train the new code"


@dataclass(frozen=True)
class Level:
    """One level of a factor: its name in the space (what reports show) and the realization
    it builds, with parameters as canonical JSON; ``sha256`` of inline text or of the plugin
    file that registered the realization (None for hscale's own)."""

    name: str
    realization: str
    params: str = "{}"
    sha256: str | None = None

    def spec(self) -> dict[str, Any]:
        return {"name": self.realization, "params": json.loads(self.params)}

    def record(self) -> dict[str, Any]:
        params = json.loads(self.params)
        return {"name": self.name, "realization": self.realization,
                **({"params": params} if params else {}),
                **({"sha256": self.sha256} if self.sha256 else {})}


@dataclass(frozen=True)
class SpaceFactor:
    """A factor: its short name (the letter in labels), the component it sets, its levels."""

    name: str
    component: str
    levels: tuple[Level, ...]


@dataclass(frozen=True)
class Plugin:
    """A plugin as planned: its file (absolute; None for an installed module), its module
    name, and the sha256 of its file."""

    module: str
    sha256: str
    path: str | None = None

    def record(self) -> dict[str, Any]:
        return {"module": self.module, "sha256": self.sha256,
                **({"path": self.path} if self.path else {})}


@dataclass(frozen=True)
class HarnessSpace:
    """A factor space whose levels are realizations; ``described``: recorded with its
    components and realizations (False for the papers' space, recorded by level names);
    ``outside``: out-of-space harnesses a spec composed from the registry, each a name and
    its components' specs as JSON (presets such as ``oos/shell`` need no entry)."""

    name: str
    factors: tuple[SpaceFactor, ...]
    plugins: tuple[Plugin, ...] = ()
    described: bool = True
    outside: tuple[tuple[str, str], ...] = ()

    @cached_property
    def factor_space(self) -> FactorSpace:
        words = {c.name: c.description for c in COMPONENTS_OF_THE_PAPERS}
        return FactorSpace(tuple(Factor(f.name, tuple(level.name for level in f.levels),
                                        words.get(f.component, f.component.replace("_", " ")))
                                 for f in self.factors), name=self.name)

    def components(self) -> dict[str, str]:
        """Factor name -> the component it sets."""
        return {f.name: f.component for f in self.factors}

    def composed(self) -> dict[str, dict[str, Any]]:
        """The composed out-of-space harnesses: name -> component -> realization spec."""
        return {name: json.loads(text) for name, text in self.outside}

    def harness(self, label: str) -> Any:
        """The harness a label of this space (or a composed out-of-space name) names,
        built anew: callers cache."""
        from hscale.harness._harness import Harness

        composed = self.composed()
        if label in composed:
            return Harness.from_names(composed[label], name=label)
        config = self.factor_space.parse_label(label)
        names = {f.component: f.levels[int(v)].spec()
                 for f, v in zip(self.factors, config, strict=True)}
        return Harness.from_names(names, name=self.factor_space.label(config))

    def check(self) -> None:
        """Build every level once: a level whose realization is missing or refuses its
        parameters is an HscaleError naming the factor and the level."""
        from hscale.harness import components as registry
        from hscale.harness.components import Extra

        for f in self.factors:
            for i, level in enumerate(f.levels):
                try:
                    built = registry.get(level.realization, **json.loads(level.params))
                except HscaleError as exc:
                    raise HscaleError(f"factor {f.name} level {i} ({level.name}): "
                                      f"{exc.message}", exc.hint) from None
                if f.component not in COMPONENTS and not isinstance(built, Extra):
                    raise HscaleError(f"factor {f.name} level {i} ({level.name}): "
                                      f"{level.realization} is not an Extra",
                                      "subclass hscale.harness.components._extra.Extra")

    def record(self) -> dict[str, Any]:
        """The manifest's ``space`` (less weights): names and levels, and for a described
        space every factor's component and every level's realization, and the plugins."""
        out: dict[str, Any] = {"name": self.name, "factors": {
            f.name: [level.name for level in f.levels] for f in self.factors}}
        if self.described:
            out["components"] = [{"factor": f.name, "component": f.component,
                                  "levels": [level.record() for level in f.levels]}
                                 for f in self.factors]
            if self.plugins:
                out["plugins"] = [p.record() for p in self.plugins]
        if self.outside:
            out["harnesses"] = self.composed()
        return out

    def to_json(self) -> str:
        """The record as JSON (what veRL's rows carry for a described space); key order is
        kept: a label's parts follow the factors' order."""
        return json.dumps(self.record(), separators=(",", ":"))


def papers_space() -> HarnessSpace:
    """The papers' space H = S x T x O x C x W (recorded by level names, as before)."""
    return _papers()


@cache
def _papers() -> HarnessSpace:
    return HarnessSpace("harness", tuple(
        SpaceFactor(c.factor, c.name, tuple(Level(r, f"{c.name}/{r}") for r in c.realizations))
        for c in COMPONENTS_OF_THE_PAPERS), described=False)


def from_record(record: Mapping[str, Any]) -> HarnessSpace:
    """The space a manifest recorded; its plugins loaded, each refused when its file changed
    since planning. A record without components names realizations by level name, one
    factor per component letter (the papers' space and manifests written before)."""
    return _from_json(json.dumps({k: v for k, v in record.items() if k != "weights"}))


@cache
def _from_json(text: str) -> HarnessSpace:
    record = json.loads(text)
    name = str(record["name"])
    outside = tuple((n, canonical(c)) for n, c in (record.get("harnesses") or {}).items())
    if not record.get("components"):
        if name == "harness" and record["factors"] == {
                f.name: [lv.name for lv in f.levels] for f in _papers().factors}:
            return replace(_papers(), outside=outside) if outside else _papers()
        factors = []
        for letter, levels in record["factors"].items():
            component = FACTOR_COMPONENTS.get(letter)
            if component is None:
                raise HscaleError(f"factor {letter} of space {name} sets no harness component",
                                  f"give the space by components (factors {', '.join(BASE)})")
            factors.append(SpaceFactor(letter, component, tuple(
                Level(lv, f"{component}/{lv}") for lv in levels)))
        return HarnessSpace(name, tuple(factors), described=False, outside=outside)
    plugins = tuple(Plugin(p["module"], p["sha256"], p.get("path"))
                    for p in record.get("plugins") or ())
    for plugin in plugins:
        load_plugin(plugin)
    factors = tuple(
        SpaceFactor(body["factor"], body["component"], tuple(
            Level(lv["name"], lv["realization"], canonical(lv.get("params") or {}),
                  lv.get("sha256")) for lv in body["levels"]))
        for body in record["components"])
    return HarnessSpace(name, factors, plugins, outside=outside)


def canonical(params: Mapping[str, Any]) -> str:
    return json.dumps(dict(params), sort_keys=True, separators=(",", ":"))


def sha256_of(data: bytes | str) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


# ------------------------------------------------------------------------------- plugins

# module name -> (the sha256, the path) of the file it was executed from in this process
_LOADED: dict[str, tuple[str, Path]] = {}
# The package a Ray cluster's workers get the planned plugin files in, each named by its
# sha256 (stage_plugins): a node that lacks a plugin's path loads it from there.
SHIPPED = "hscale_plugins"


def plugin_of(source: str, base: Path | None = None) -> Plugin:
    """A spec's plugin entry as planned: a ``.py`` file (relative to ``base``, the spec's
    folder) or an importable module's dotted name; loaded now, so what it registers can be
    checked."""
    beside = (base or Path.cwd()) / Path(source).expanduser()
    if is_file_source(source) or beside.is_file():  # notes.txt beside the spec: a file
        path = Path(source).expanduser()
        path = (base / path if base is not None and not path.is_absolute() else path).resolve()
        if path.is_dir():
            raise HscaleError(f"plugin {source}: is a folder, not a Python file",
                              "give the path of a .py file (relative to the spec's folder)")
        if path.exists() and path.suffix != ".py":
            raise HscaleError(f"plugin {source}: not a Python file (its name does not end in "
                              ".py)", "give the path of a .py file, or an importable module's "
                              "dotted name")
        data = _read(path, source)
        plugin = Plugin(_module_name(path), sha256_of(data), str(path))
        probe(source, plugin.module, plugin.sha256, path)
    else:
        if not all(part.isidentifier() for part in source.split(".")):
            raise HscaleError(f"plugin {source!r}: neither a .py file nor a module's dotted "
                              "name", "give the path of a .py file (relative to the spec's "
                              "folder) or a module name such as my_package.harnesses")
        if importlib.util.find_spec(source.split(".")[0]) is not None:  # else _import says so
            probe(source, source, "", None)
        module = _import(source)
        file = getattr(module, "__file__", None)
        if not file:
            raise HscaleError(f"plugin {source}: a module without a file cannot be hashed",
                              "give a module with a .py file, or the file's path")
        return Plugin(source, sha256_of(_read(Path(file), source)))  # imported just now
    load_plugin(plugin)
    return plugin


def is_file_source(source: str) -> bool:
    """A plugin entry names a file (``x.py``, a path) rather than an importable module."""
    return source.endswith(".py") or "/" in source or "\\" in source


def load_plugin(plugin: Plugin) -> None:
    """Import a planned plugin (once a process), after checking its file still holds the
    code that was planned."""
    if plugin.path is None:
        module = _import(plugin.module)
        data = _read(Path(module.__file__ or ""), plugin.module)
        if sha256_of(data) != plugin.sha256:
            raise HscaleError(f"plugin {plugin.module} changed after planning "
                              f"({module.__file__})", REPLAN)
        return
    path = Path(plugin.path)
    if not path.is_file():
        path = _shipped(plugin.sha256) or path
    data = _read(path, plugin.path)
    if sha256_of(data) != plugin.sha256:
        raise HscaleError(f"plugin {path} changed after planning (its sha256 is not the "
                          "planned one)", REPLAN)
    if _LOADED.get(plugin.module, ("",))[0] == plugin.sha256:
        return
    spec = importlib.util.spec_from_file_location(plugin.module, path)
    if spec is None or spec.loader is None:
        raise HscaleError(f"plugin {path}: not a Python file", "give a .py file")
    from hscale.harness.components import load_builtins

    load_builtins()  # hscale's own kinds and realizations first: a plugin's clash is its own
    module = importlib.util.module_from_spec(spec)
    sys.modules[plugin.module] = module
    try:
        spec.loader.exec_module(module)
    except HscaleError as exc:
        sys.modules.pop(plugin.module, None)
        raise HscaleError(f"plugin {path}: {exc.message}", exc.hint) from None
    except (Exception, SystemExit) as exc:  # its exit is never hscale's
        sys.modules.pop(plugin.module, None)
        raise HscaleError(f"plugin {path} failed to load: {type(exc).__name__}: {exc}",
                          "run it with python to see the traceback") from None
    _LOADED[plugin.module] = (plugin.sha256, path)


def plugin_path(module: str) -> str:
    """The file a loaded plugin module came from."""
    return str(_LOADED[module][1]) if module in _LOADED else module


def from_a_file_plugin(module: str) -> bool:
    """Whether ``module`` is a plugin file this process loaded (its realizations are part
    of a spec only when the spec lists the file)."""
    return module in _LOADED


def stage_plugins() -> Path | None:
    """The plugin files this process loaded, in one ``hscale_plugins`` package folder named
    by their content (what a Ray runtime_env's ``py_modules`` uploads); None when none."""
    if not _LOADED:
        return None
    files = {sha: path.read_bytes() for sha, path in _LOADED.values() if path.is_file()}
    digest = sha256_of("".join(sorted(files)))[:16]
    folder = Path(tempfile.gettempdir()) / f"hscale-plugins-{digest}" / SHIPPED
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "__init__.py").write_text('"""Plugin files of planned runs, by sha256."""\n')
    for sha, data in files.items():
        if not (folder / f"p{sha}.py").is_file():
            (folder / f"p{sha}.py").write_bytes(data)
    return folder


def _shipped(sha: str) -> Path | None:
    """A plugin file by its sha256 in the shipped package, when this process has one."""
    try:
        spec = importlib.util.find_spec(SHIPPED)
    except (ImportError, ValueError):
        return None
    for root in (spec.submodule_search_locations or ()) if spec else ():
        if (Path(root) / f"p{sha}.py").is_file():
            return Path(root) / f"p{sha}.py"
    return None


def _module_name(path: Path) -> str:
    """A plugin file's module name: stable across runs and machines (its registrations then
    replace their own on a reload)."""
    stem = "".join(c if c.isalnum() else "_" for c in path.stem)
    return f"hscale_plugin_{stem}"


def _read(path: Path, source: str) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise HscaleError(f"plugin {source}: no such file", "give the path of a .py file "
                          "(relative to the spec's folder) or a module name") from None
    except OSError as exc:
        raise HscaleError(f"plugin {source}: unreadable ({exc.strerror})") from None


def _import(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise HscaleError(f"plugin {name}: cannot import it ({exc})",
                          "install the module, or give the path of a .py file") from None
    except (Exception, SystemExit) as exc:
        raise HscaleError(f"plugin {name} failed to load: {type(exc).__name__}: {exc}",
                          "import it in python to see the traceback") from None
