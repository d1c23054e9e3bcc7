"""The spec reference, written from the spec's models so it cannot drift from what they
accept: every key with its type, default, allowed values, what it does (the field's
docstring) and an example (from a shipped spec that sets it, where one does). The docs site
builds its page from :func:`spec_reference`; a test checks :func:`spec_keys` against it."""

from __future__ import annotations

import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import annotated_types as at
import yaml
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

# Sections: (dotted path of the key holding the model, the model's class name, a sentence).
# ``arms.<arm>`` stands for every arm and ``defaults``, which take the same keys.
ARM = "arms.<arm>"


def _sections() -> list[tuple[str, type[BaseModel], str]]:
    from hscale.train.spec._benchmark import Benchmark
    from hscale.train.spec._blackbox import BlackBoxTraining
    from hscale.train.spec._experiment import (
        Algorithm,
        Arm,
        Assignment,
        Evaluation,
        ExperimentSpec,
        TrainSet,
    )
    from hscale.train.spec._hypotheses import Hypotheses, Hypothesis
    from hscale.train.spec._space import ComposedHarness, FactorSpec, LevelSpec, SpaceSpec
    from hscale.train.spec._sweeps import KSweep, SizeSweep, Sweeps
    from hscale.train.spec._verl import VerlSettings

    return [
        ("", ExperimentSpec, "The top level of an experiment spec."),
        ("benchmark", Benchmark, "Where tasks come from; also each of "
                                 "`evaluation.benchmarks`."),
        ("algorithm", Algorithm, "The RL algorithm; an arm's `algorithm` takes the same keys."),
        ("evaluation", Evaluation, "What every run is evaluated on."),
        (ARM, Arm, "One arm (a key of `arms`); `defaults` takes the same keys and every arm "
                   "inherits them."),
        (f"{ARM}.train", TrainSet, "The arm's training harness set; a bare recipe name "
                                   "(`train: single`) is short for `{recipe: single}`."),
        (f"{ARM}.assignment", Assignment, "How the arm assigns harnesses to training slots."),
        (f"{ARM}.blackbox", BlackBoxTraining, "An arm trained through a black-box CLI."),
        ("space", SpaceSpec, "A space of your own, in place of `harness`."),
        ("space.factors.<factor>", FactorSpec, "One factor (or just its list of levels)."),
        ("space.factors.<factor>.levels[]", LevelSpec, "A level given as a mapping (or just "
                                                       "a realization's name)."),
        ("evaluation.out_of_space[]", ComposedHarness, "An out-of-space harness composed "
                                                       "from the registry (or a preset's "
                                                       "name)."),
        ("sweeps", Sweeps, "Arms declared over N and K."),
        ("sweeps.size", SizeSweep, "One arm per recipe and N."),
        ("sweeps.k", KSweep, "One arm per K."),
        ("verl", VerlSettings, "veRL's side of every run (the `verl` backend)."),
        ("hypotheses", Hypotheses, "The study's confirmatory questions (a bare list is short "
                                   "for `{tests: [...]}`)."),
        ("hypotheses.tests[]", Hypothesis, "One hypothesis: an arm against another (or the "
                                           "base model) in one setting."),
    ]


def spec_keys() -> set[str]:
    """Every key the spec's models accept, as dotted paths (the reference's rows)."""
    return {path for path, *_ in _rows()}


def _rows() -> Iterator[tuple[str, str, FieldInfo]]:
    for section, model, _ in _sections():
        for name, field in model.model_fields.items():
            yield (f"{section}.{name}" if section else name), name, field


def spec_reference(examples_root: Path | None = None) -> str:
    """The reference page (Markdown): one table a section; examples from the specs under
    ``examples_root`` (the repository's ``experiments/``) where one sets the key."""
    examples = _examples(examples_root) if examples_root else {}
    out = ["# Spec reference", "",
           "Every key an experiment spec accepts, generated from the spec's models "
           "(`hscale.train.spec`), so it lists exactly what `hscale validate` accepts. A key "
           "left out takes its default; an unknown key is refused with the file, the line and "
           "a did-you-mean. Examples come from the specs shipped in `experiments/`.", ""]
    for section, model, sentence in _sections():
        title = f"`{section}`" if section else "Top level"
        out += [f"## {title}", "", sentence, "", "| key | type, default | what it does |",
                "|---|---|---|"]
        for name, field in model.model_fields.items():
            path = f"{section}.{name}" if section else name
            example = examples.get(_pattern(path))
            allowed = _allowed(field)
            text = " ".join(x for x in (
                field.description or "", f"Allowed: {allowed}." if allowed else "",
                f"Example: `{example[0]}` ({example[1]})." if example else "") if x)
            out.append(f"| `{name}` | {_cell(_type(field.annotation))}, "
                       f"{_cell(_default(field))} | {_cell(text)} |")
        out.append("")
    return "\n".join(out)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _default(field: FieldInfo) -> str:
    shown = (field.json_schema_extra or {}).get("shown_default") \
        if isinstance(field.json_schema_extra, dict) else None
    if shown:  # a default the model fills in, but a spec may not leave empty
        return str(shown)
    if field.is_required():
        return "required"
    value = field.default_factory() if field.default_factory is not None else field.default
    if value is PydanticUndefined:
        return "required"
    if isinstance(value, BaseModel):
        return "default: its keys' defaults"
    if value is None:
        return "default none"
    return f"default `{_short(value)}`"


def _allowed(field: FieldInfo) -> str:
    """Names a registry accepts, a literal's values, and numeric or length bounds."""
    parts = []
    for registry in _registries(field.annotation, field.metadata):
        parts.append("a registered name: " + ", ".join(f"`{n}`" for n in registry.names()))
    literals = _literals(field.annotation)
    if literals:
        parts.append(", ".join(f"`{v}`" for v in literals))
    parts += _bounds(field.metadata)
    return "; ".join(parts)


def _registries(annotation: Any, metadata: list) -> list:
    found = [getattr(getattr(m, "func", None), "registry", None) for m in metadata]
    for arg in typing.get_args(annotation):
        if typing.get_origin(arg) is typing.Annotated:
            found += [getattr(getattr(m, "func", None), "registry", None)
                      for m in arg.__metadata__]
        elif isinstance(arg, type | types.UnionType) or typing.get_args(arg):
            found += _registries(arg, [])
    return [r for r in found if r is not None]


def _literals(annotation: Any) -> list:
    if typing.get_origin(annotation) is typing.Literal:
        return list(typing.get_args(annotation))
    return [v for arg in typing.get_args(annotation) for v in _literals(arg)]


def _bounds(metadata: list) -> list[str]:
    words = {at.Ge: (">=", "ge"), at.Gt: (">", "gt"), at.Le: ("<=", "le"), at.Lt: ("<", "lt"),
             at.MinLen: ("length >=", "min_length"), at.MaxLen: ("length <=", "max_length")}
    out = []
    for m in metadata:
        for kind, (word, attr) in words.items():
            if isinstance(m, kind):
                value = getattr(m, attr)
                out.append(f"{word} {value:,}" if isinstance(value, int) else f"{word} {value}")
        pattern = getattr(m, "pattern", None)
        if pattern:
            out.append(f"matches `{pattern}`")
    return out


def _type(annotation: Any) -> str:
    """A reader's name for a field's type: int, list of int, mapping of str to float, one of
    several, a section's keys."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return _type(args[0])
    if origin in (typing.Union, types.UnionType):
        kinds = [_type(a) for a in args if a is not type(None)]
        return " or ".join(dict.fromkeys(kinds))
    if origin is typing.Literal:
        return "str" if all(isinstance(a, str) for a in args) else "value"
    if origin in (list, tuple):
        return f"list of {_type(args[0])}" if args else "list"
    if origin is dict:
        return f"mapping of {_type(args[0])} to {_type(args[1])}"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "mapping (below)"
    if annotation is typing.Any:
        return "any"
    return getattr(annotation, "__name__", str(annotation))


def _pattern(path: str) -> str:
    return path.replace(".<arm>", ".*").replace(".<factor>", ".*").replace("[]", ".#")


def _examples(root: Path) -> dict[str, tuple[str, str]]:
    """Key pattern -> (a value a shipped spec gives it, the spec's path), first spec first;
    an arm's keys are also found in ``defaults``."""
    found: dict[str, tuple[str, str]] = {}
    for spec in sorted(root.rglob("*.yaml")):
        try:
            tree = yaml.safe_load(spec.read_text())
        except (OSError, yaml.YAMLError):
            continue
        if not isinstance(tree, dict) or "name" not in tree:
            continue
        where = str(spec.relative_to(root.parent))
        for key, value in _walk(tree):
            found.setdefault(key, (_short(value), where))
    return found


def _walk(tree: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(tree, dict):
        for key, value in tree.items():
            key = str(key)
            if prefix == "" and key == "defaults":
                yield "defaults", value
                yield from _walk(value, "arms.*")
                continue
            path = f"{prefix}.{key}" if prefix else key
            if prefix in ("arms", "space.factors"):
                path = f"{prefix}.*"
            yield path, value
            yield from _walk(value, path)
    elif isinstance(tree, list):
        for item in tree:
            if isinstance(item, dict):
                yield from _walk(item, f"{prefix}.#")


def _short(value: Any) -> str:
    text = yaml.safe_dump(value, default_flow_style=True, width=1000).strip()
    text = text.removesuffix("\n...").removesuffix("...").strip()
    return text if len(text) <= 60 else text[:57] + "..."
