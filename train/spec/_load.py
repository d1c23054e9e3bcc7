"""Reading an experiment YAML: validation errors located at the file and line the user wrote,
arms merged over ``defaults``, and the paths in a spec made absolute against its folder."""

from __future__ import annotations

import datetime
import difflib
import re
import warnings
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from hscale.design import WeightError
from hscale.errors import HscaleError, HscaleWarning
from hscale.registry import UnknownName
from hscale.train.spec._benchmark import Benchmark
from hscale.train.spec._blackbox import BlackBoxTraining
from hscale.train.spec._experiment import (
    MAX_SCHEDULE_ROWS,
    Algorithm,
    Arm,
    Assignment,
    Evaluation,
    ExperimentSpec,
    TrainSet,
    _merge,
)
from hscale.train.spec._models import check_spec_model, is_local_path
from hscale.train.spec._space import (
    ComposedHarness,
    FactorSpec,
    LevelSpec,
    SpaceError,
    SpaceSpec,
    resolve_space,
)
from hscale.train.spec._sweeps import KSweep, SizeSweep, SweepError, Sweeps
from hscale.train.spec._verl import VerlSettings
from hscale.train.spec._weights import spec_weights
from hscale.yamlio import key_line, read_yaml

_MODELS = {m.__name__: m for m in (ExperimentSpec, Arm, SpaceSpec, FactorSpec, LevelSpec,
                                    ComposedHarness, BlackBoxTraining, VerlSettings)}
_FIELDS = {
    "ExperimentSpec": ExperimentSpec, "benchmark": Benchmark, "algorithm": Algorithm,
    "evaluation": Evaluation, "assignment": Assignment, "train": TrainSet,
    "sweeps": Sweeps, "size": SizeSweep, "k": KSweep,
}


def _suggest(loc: tuple[Any, ...], in_arm: bool) -> str:
    """Did-you-mean for an unknown key, from the fields of the model that holds it: the
    nearest model a union branch names in pydantic's location, else the nearest section."""
    if not loc:
        return ""
    key = str(loc[-1])
    model = next((_MODELS.get(str(p)) or _FIELDS.get(str(p)) for p in reversed(loc[:-1])
                  if str(p) in _MODELS or str(p) in _FIELDS), Arm if in_arm else ExperimentSpec)
    close = difflib.get_close_matches(key, list(model.model_fields), n=1)
    known = ", ".join(model.model_fields)
    return (f"did you mean {close[0]!r}? " if close else "") + f"known keys: {known}"


def load_spec(path: str | Path) -> ExperimentSpec:
    """Read and validate an experiment YAML; every problem names the file and line."""
    path = Path(path)
    data, tree = read_yaml(path, "experiment YAML")
    if not isinstance(data, dict):
        raise HscaleError(f"{path}: an experiment is a mapping of keys", "start with name: ...")
    try:
        spec = ExperimentSpec.model_validate(data)
    except ValidationError as exc:
        raise _spec_error(path, tree, exc, (), data) from None
    try:
        spec_weights(spec.weights, resolve_space(spec.space, path.parent,
                                                 spec.evaluation.out_of_space))
    except SpaceError as exc:
        where = ".".join(str(p) for p in exc.loc)
        raise HscaleError(f"{path}:{key_line(tree, exc.loc) or 1}: {where}: {exc.message}",
                          exc.hint) from None
    except WeightError as exc:
        raise HscaleError(f"{path}:{key_line(tree, ('weights', exc.key or ''))}: {exc.message}",
                          exc.hint) from None
    for note in spec.sweep_notes:  # once a process: same text, same place
        warnings.warn(f"{path}:{key_line(tree, ('sweeps',))}: {note}", HscaleWarning, stacklevel=1)
    for name, body in spec.arms.items():
        loc = spec.swept.get(name, ("arms", name))
        try:
            merged = _merge(spec.defaults, body or {})
            arm = Arm.model_validate(merged)
        except ValidationError as exc:
            raise _spec_error(path, tree, exc, loc, merged) from None
        where = f"{path}:{key_line(tree, loc)}: arm {name}"
        if isinstance(arm.assignment.pool, str):  # a frozen pool file, checked now
            from hscale.train.harness_s import read_pool

            try:
                read_pool(path.parent / Path(arm.assignment.pool).expanduser())
            except HscaleError as exc:
                raise HscaleError(f"{where}: assignment.pool: {exc.message}", exc.hint) from None
        teacher = arm.blackbox.teacher if arm.blackbox else "scripted"
        if _is_file(teacher) and not (path.parent / Path(teacher).expanduser()).exists():
            raise HscaleError(f"{where}: blackbox.teacher: no such model folder or checkpoint "
                              f"{teacher!r} (beside the spec)", "give the teacher's path "
                              "relative to the spec's folder, or an endpoint URL")
        if arm.assignment.mode == "rescue" and arm.assignment.router is None:
            raise HscaleError(f"{where}: rescue assignment needs a router",
                              "add router: rule (or random)")
        if spec.steps % arm.assignment.k:
            raise HscaleError(f"{where}: {spec.steps} steps do not split into groups of "
                              f"K={arm.assignment.k} successive steps",
                              "use a number of steps divisible by every arm's K")
        per_step = (arm.algorithm or spec.algorithm).tasks_per_step
        if spec.steps * per_step > MAX_SCHEDULE_ROWS:
            raise HscaleError(f"{where}: {spec.steps} steps x {per_step} tasks a step is "
                              f"{spec.steps * per_step} scheduled rows a run, more than "
                              f"{MAX_SCHEDULE_ROWS}", "lower steps or tasks_per_step")
    _check_stages(spec, path, tree)
    try:
        check_spec_model(spec.model, path.parent)
    except HscaleError as exc:
        raise HscaleError(f"{path}:{key_line(tree, ('model',)) or 1}: {exc.message}",
                          exc.hint) from None
    spec = with_paths(spec, path.parent)
    if spec.evaluation.every is not None and spec.evaluation.every > spec.steps:
        raise HscaleError(f"{path}:{key_line(tree, ('evaluation', 'every'))}: evaluation.every="
                          f"{spec.evaluation.every} is more than steps={spec.steps}",
                          "evaluate at most once a step, or leave every out")
    return spec


def _check_stages(spec: ExperimentSpec, path: Path, tree: yaml.Node | None) -> None:
    """A staged study: a fixed sequence, and every arm of a hypothesis holding the seeds of
    the last look."""
    found = spec.hypotheses
    if not found or not found.stages:
        return
    line = key_line(tree, ("hypotheses", "stages")) or 1
    if found.procedure != "fixed-sequence":
        raise HscaleError(f"{path}:{line}: hypotheses.stages: a staged study tests its "
                          "hypotheses in a fixed sequence", "drop procedure: holm, or stages")
    arms = spec.resolved_arms()
    names = [n for h in found.tests for n in (h.arm, h.than) if n in arms]
    for name in dict.fromkeys(names):
        seeds = spec.arm_seeds(arms[name])
        if len(seeds) < found.stages[-1]:
            raise HscaleError(f"{path}:{line}: hypotheses.stages: arm {name} has "
                              f"{len(seeds)} seeds; the last look needs "
                              f"{found.stages[-1]}", f"list them: arms.{name}.seeds: "
                              f"[{', '.join(map(str, range(found.stages[-1])))}]")


def with_paths(spec: ExperimentSpec, base: Path) -> ExperimentSpec:
    """Benchmark, plugin and model folder paths made absolute against ``base`` (the spec's
    folder): a plan run from any folder finds the same files."""
    def resolve(bench: Benchmark) -> Benchmark:
        if not bench.path or Path(bench.path).is_absolute():
            return bench
        return bench.model_copy(update={"path": str((base / bench.path).resolve())})

    evaluation = spec.evaluation
    if evaluation.benchmarks:
        evaluation = evaluation.model_copy(
            update={"benchmarks": [resolve(b) for b in evaluation.benchmarks]})
    model = spec.model
    if is_local_path(model) and not Path(model).expanduser().is_absolute():
        model = str((base / Path(model).expanduser()).resolve())
    space = spec.space if isinstance(spec.space, str) else spec.space.with_base(base)
    return spec.model_copy(update={"benchmark": resolve(spec.benchmark), "space": space,
                                   "evaluation": evaluation, "model": model,
                                   "defaults": _arm_paths(spec.defaults, base),
                                   "arms": {n: _arm_paths(b, base) if b else b
                                            for n, b in spec.arms.items()}})


def _is_file(teacher: str) -> bool:
    return teacher.endswith(".pt") or is_local_path(teacher)


def _arm_paths(body: dict[str, Any], base: Path) -> dict[str, Any]:
    """An arm body with its pool file (``assignment.pool: pool.json``) and its black-box
    teacher's model path made absolute."""
    out = dict(body)
    for section, key, is_path in (("assignment", "pool", lambda v: True),
                                  ("blackbox", "teacher", _is_file)):
        part = out.get(section)
        value = part.get(key) if isinstance(part, dict) else None
        if isinstance(value, str) and is_path(value) \
                and not Path(value).expanduser().is_absolute():
            out[section] = {**part, key: str((base / Path(value).expanduser()).resolve())}
    return out


def _spec_error(path: Path, tree: yaml.Node | None, exc: ValidationError,
                prefix: tuple[Any, ...], data: Any) -> HscaleError:
    """One line for a validation failure: the error deepest in what the user wrote (an
    unknown key first: a typo explains the "missing" field), located by the user's keys."""
    scored = [(e, _user_loc(data, e["loc"], e["type"])) for e in exc.errors()]
    extra = [s for s in scored if s[0]["type"] == "extra_forbidden"]
    err, mine = max(extra or scored,
                    key=lambda s: (len(s[1]), s[0]["type"] not in _WRONG_BRANCH))
    loc = prefix + mine
    line = key_line(tree, loc) or 1
    where = ".".join(str(p) for p in loc) or "(top level)"
    if err["type"] == "extra_forbidden":
        return HscaleError(f"{path}:{line}: unknown key {where!r}",
                           _suggest(err["loc"], bool(prefix)))
    cause = (err.get("ctx") or {}).get("error")
    if isinstance(cause, SweepError):
        return HscaleError(f"{path}:{key_line(tree, cause.loc) or 1}: {cause.message}", cause.hint)
    if isinstance(cause, UnknownName):
        return HscaleError(f"{path}:{line}: {where}: {cause}", cause.hint)
    if isinstance(cause, HscaleError):
        return HscaleError(f"{path}:{line}: {where}: {cause.message}", cause.hint)
    if err["type"] == "too_short" and loc[:2] == ("space", "factors"):
        n = err["ctx"]["actual_length"]
        return HscaleError(f"{path}:{line}: {where}: {n} level{'s' * (n != 1)}, and a factor "
                           "varies over at least 2", "add a level, or leave the factor out "
                           "(then every harness holds the component's base realization)")
    if err["type"] == "dict_type":
        return HscaleError(f"{path}:{line}: {where}: {err['input']!r} is not a mapping",
                           f"write {loc[-1] if loc else 'it'}: {{key: value, ...}}")
    if err["type"] == "string_pattern_mismatch":
        return HscaleError(f"{path}:{line}: {where}: {err['input']!r} is not a name here",
                           "names are ASCII letters, digits and _ . - (up to 64, starting "
                           "with a letter or digit): they become folder, file and label parts")
    if err["type"] == "string_type" and err["input"] is None:
        return HscaleError(f"{path}:{line}: {where}: empty (YAML reads a key with no value, "
                           "~ or null as nothing)", "give it a value, or leave the key out")
    if err["type"] == "string_type" and not isinstance(err["input"], (dict, list)):
        return HscaleError(f"{path}:{line}: {where}: {err['input']!r} is read as "
                           f"{_yaml_type(err['input'])}, not text",
                           "put it in double quotes as you wrote it, so YAML reads text")
    hint = _described(loc) or ("see experiments/demo.yaml for a complete example, or the "
                                "spec reference in the docs")
    branches = [e for e, m in scored if m == mine and e["type"] in _WRONG_BRANCH]
    if err["type"] in _WRONG_BRANCH and len(branches) > 1:  # a union: say every form it takes
        forms = list(dict.fromkeys(_form(e) for e in branches))
        forms = [f for f in forms if not any(f != g and f in g for g in forms)]
        return HscaleError(f"{path}:{line}: {where}: {_shown(err['input'])} is not "
                           + " or ".join(forms), hint)
    return HscaleError(f"{path}:{line}: {where}: {_said(err)}", hint)


def _described(loc: tuple[Any, ...]) -> str:
    """``key: what it is`` from the spec model's own documentation of the key at ``loc``
    (the spec reference's words), or "" where no model documents it."""
    keys = [str(p) for p in loc if not isinstance(p, int)]
    if not keys:
        return ""
    parent = keys[-2] if len(keys) > 1 else "ExperimentSpec"
    model = _FIELDS.get(parent) or (Arm if len(keys) == 3 and keys[0] in ("arms", "defaults")
                                    or len(keys) == 2 and keys[0] == "defaults" else None)
    field = getattr(model, "model_fields", {}).get(keys[-1])
    text = " ".join((field.description or "").replace("`", "").split()) if field else ""
    if not text:
        return ""
    first = text.split(". ")[0].rstrip(".")
    return f"{keys[-1]}: {first[:1].lower()}{first[1:]}"


# the plain form a value of each model takes (pydantic names the class)
_FORMS = {
    "FactorSpec": "a factor: a list of levels, or {component: KIND, levels: [...]}",
    "LevelSpec": "a level: a realization's name, or {realization: NAME, params: {...}, "
                 "name: LABEL}",
    "SpaceSpec": "a space: harness, or {name: ..., factors: {...}}",
    "ComposedHarness": "an out-of-space harness: a preset's name, or {name: ..., "
                       "components: {...}}",
    "BlackBoxTraining": "a blackbox section: {harness: bb/NAME, method: sft or rl, "
                        "teacher: ...}",
    "VerlSettings": "veRL settings: a mapping of keys",
}
_TYPES = {"string_type": "text", "list_type": "a list", "dict_type": "a mapping of keys",
          "int_type": "a whole number", "int_parsing": "a whole number",
          "int_from_float": "a whole number", "float_type": "a number",
          "float_parsing": "a number", "bool_type": "true or false",
          "bool_parsing": "true or false", "model_attributes_type": "a mapping of keys"}


def _form(err: dict[str, Any]) -> str:
    """What a value must be, in the user's words, for one pydantic error."""
    if err["type"] == "model_type":
        return _FORMS.get(str((err.get("ctx") or {}).get("class_name")), "a mapping of keys")
    if err["type"] == "literal_error":
        return f"one of {(err.get('ctx') or {}).get('expected', '')}"
    return _TYPES.get(err["type"], "of the form the key takes")


def _shown(value: Any) -> str:
    """A value the user wrote, as the message quotes it."""
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "nothing (null)"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _said(err: dict[str, Any]) -> str:
    """One pydantic error in plain words: the value, and what it must be instead."""
    kind, ctx, value = err["type"], err.get("ctx") or {}, _shown(err.get("input"))
    bounds = {"greater_than_equal": ("less than", "ge"), "greater_than": ("not more than", "gt"),
              "less_than_equal": ("more than", "le"), "less_than": ("not less than", "lt")}
    if kind in bounds:
        words, key = bounds[kind]
        bound = ctx.get(key)
        return f"{value} is {words} {bound:g}" if isinstance(bound, float) else \
            f"{value} is {words} {bound}"
    if kind in ("too_short", "too_long"):
        short = kind == "too_short"
        return (f"{ctx.get('actual_length')} items; {'at least' if short else 'at most'} "
                f"{ctx.get('min_length' if short else 'max_length')}")
    if kind in ("string_too_short", "string_too_long"):
        short = kind == "string_too_short"
        return (f"{value} is too {'short' if short else 'long'}: "
                f"{'at least' if short else 'at most'} "
                f"{ctx.get('min_length' if short else 'max_length')} characters")
    if kind == "missing":
        return "required, and missing"
    if kind == "value_error":
        return str(ctx.get("error", err["msg"]))
    if kind in _TYPES or kind in ("model_type", "literal_error"):
        return f"{value} is not {_form(err)}"
    return re.sub(r" or instance of \w+", "", err["msg"]).replace("Input should be",
                                                                   "should be")


# What a union's other branch says when the user wrote the shape of this one: the deeper,
# more specific error of the branch that fits explains the mistake.
_WRONG_BRANCH = {"string_type", "model_type", "dict_type", "list_type", "int_type",
                 "float_type", "bool_type", "model_attributes_type", "literal_error"}


def _user_loc(data: Any, loc: tuple[Any, ...], kind: str) -> tuple[Any, ...]:
    """The parts of a pydantic location that walk the user's YAML: a union's branch names
    (``SpaceSpec``, ``list[...]``, ``function-after[...]``) are pydantic's, not keys the user
    wrote; a missing key is kept though it is not there."""
    node, out = data, []
    for i, part in enumerate(loc):
        inside = (part in node if isinstance(node, dict) else isinstance(node, list)
                  and isinstance(part, int) and 0 <= part < len(node))
        if inside:
            node = node[part]
        elif not (kind == "missing" and i == len(loc) - 1 and isinstance(node, dict)):
            continue
        out.append(part)
    return tuple(out)


def _yaml_type(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean (YAML reads yes/no/on/off/true/false so)"
    if isinstance(value, datetime.date):
        return "a date"
    return "a number" if isinstance(value, (int, float)) else type(value).__name__
