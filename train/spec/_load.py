"""Reading an experiment YAML: validation errors located at the file and line the user wrote,
arms merged over ``defaults``, and the paths in a spec made absolute against its folder."""

from __future__ import annotations

import difflib
import warnings
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from hscale.design import WeightError
from hscale.errors import HscaleError, HscaleWarning
from hscale.registry import UnknownName
from hscale.train.spec._experiment import (
    MAX_SCHEDULE_ROWS,
    Algorithm,
    Arm,
    Assignment,
    Benchmark,
    Evaluation,
    ExperimentSpec,
    TrainSet,
    _merge,
)
from hscale.train.spec._models import check_spec_model, is_local_path
from hscale.train.spec._space import SpaceError, resolve_space
from hscale.train.spec._sweeps import KSweep, SizeSweep, SweepError, Sweeps
from hscale.train.spec._weights import spec_weights
from hscale.yamlio import key_line, read_yaml

_FIELDS = {
    "ExperimentSpec": ExperimentSpec, "benchmark": Benchmark, "algorithm": Algorithm,
    "evaluation": Evaluation, "assignment": Assignment, "train": TrainSet,
    "sweeps": Sweeps, "size": SizeSweep, "k": KSweep,
}


def _suggest(loc: tuple[Any, ...]) -> str:
    """Did-you-mean for an unknown key, from the fields of the model that holds it."""
    if not loc:
        return ""
    key, parent = str(loc[-1]), str(loc[-2]) if len(loc) > 1 else "ExperimentSpec"
    in_arm = len(loc) >= 3 and loc[-3] == "arms"
    model = Arm if in_arm else _FIELDS.get(parent, ExperimentSpec)
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
        raise _spec_error(path, tree, exc, ()) from None
    try:
        spec_weights(spec.weights, resolve_space(spec.space, path.parent,
                                                 spec.evaluation.out_of_space))
    except SpaceError as exc:
        raise HscaleError(f"{path}:{key_line(tree, exc.loc) or 1}: {exc.message}",
                          exc.hint) from None
    except WeightError as exc:
        raise HscaleError(f"{path}:{key_line(tree, ('weights', exc.key or ''))}: {exc.message}",
                          exc.hint) from None
    for note in spec.sweep_notes:  # once a process: same text, same place
        warnings.warn(f"{path}:{key_line(tree, ('sweeps',))}: {note}", HscaleWarning, stacklevel=1)
    for name, body in spec.arms.items():
        loc = spec.swept.get(name, ("arms", name))
        try:
            arm = Arm.model_validate(_merge(spec.defaults, body or {}))
        except ValidationError as exc:
            raise _spec_error(path, tree, exc, loc) from None
        where = f"{path}:{key_line(tree, loc)}: arm {name}"
        if isinstance(arm.assignment.pool, str):  # a frozen pool file, checked now
            from hscale.train.harness_s import read_pool

            try:
                read_pool(path.parent / Path(arm.assignment.pool).expanduser())
            except HscaleError as exc:
                raise HscaleError(f"{where}: assignment.pool: {exc.message}", exc.hint) from None
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
                                   "defaults": _pool_path(spec.defaults, base),
                                   "arms": {n: _pool_path(b, base) if b else b
                                            for n, b in spec.arms.items()}})


def _pool_path(body: dict[str, Any], base: Path) -> dict[str, Any]:
    """An arm body with its pool file (``assignment.pool: pool.json``) made absolute."""
    assignment = body.get("assignment")
    pool = assignment.get("pool") if isinstance(assignment, dict) else None
    if not isinstance(pool, str) or Path(pool).expanduser().is_absolute():
        return body
    return {**body, "assignment": {**assignment,
                                   "pool": str((base / Path(pool).expanduser()).resolve())}}


def _spec_error(path: Path, tree: yaml.Node | None, exc: ValidationError,
                prefix: tuple[Any, ...]) -> HscaleError:
    errors = exc.errors()  # an unknown key first: a typo explains the "missing" field
    err = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    loc = prefix + tuple(err["loc"])
    line = key_line(tree, loc) or 1
    where = ".".join(str(p) for p in loc) or "(top level)"
    if err["type"] == "extra_forbidden":
        arm_loc = ("arms", prefix[-1], *err["loc"]) if prefix else loc  # a swept arm too
        return HscaleError(f"{path}:{line}: unknown key {where!r}", _suggest(arm_loc))
    cause = (err.get("ctx") or {}).get("error")
    if isinstance(cause, SweepError):
        return HscaleError(f"{path}:{key_line(tree, cause.loc) or 1}: {cause.message}", cause.hint)
    if isinstance(cause, UnknownName):
        return HscaleError(f"{path}:{line}: {where}: {cause}", cause.hint)
    return HscaleError(f"{path}:{line}: {where}: {err['msg']}",
                       "see experiments/demo.yaml for a complete example")
