"""``hscale evaluate``: a model's Pass@1 across a set of harnesses, with no training: the
harness-sensitivity map of that model.

The result is an ordinary run folder, ``OUT/<experiment>/<model>/0/``: a manifest (an
evaluation-only run: no training harnesses, zero steps), eval.parquet in the usual contract
(greedy and sampled passes apart), an empty train.parquet and status.json, so ``hscale
report`` reads it like any trained arm (heat map over the space, main effects, the spread
between harnesses). Finished episodes are appended to a journal as they end: an
evaluation interrupted by anything, kill -9 included, resumes where it stopped and loses none
of them. Each episode samples from a seed of its own (the manifest's, the decoding, run,
benchmark, setting, harness and task), so the rerun draws what an uninterrupted run draws.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hscale.contracts import (
    EVAL,
    TRAIN,
    TRANSCRIPTS,
    Manifest,
    RunState,
    Setting,
    is_blackbox,
    read_status,
    result_problems,
    write_status,
)
from hscale.errors import HscaleError
from hscale.harness import open_benchmark
from hscale.journal import Journal, read_journal
from hscale.train.lm import MAX_NEW_TOKENS, mix
from hscale.train.planning import Recorder, harness_of
from hscale.train.spec import NAME

SETS = (Setting.BASE, Setting.IN_SPACE, "all", Setting.OUT_OF_SPACE)  # --harnesses words
MAX_TASKS, MAX_RUNS, MAX_EPISODES = 10_000, 64, 200_000  # bounds checked before any work
PARTIAL = "episodes.partial.jsonl"  # finished episodes of an evaluation under way (a journal)
_KEY = ["decoding", "run", "benchmark", "setting", "harness", "task_id"]


def harness_sets(text: str, spec: str | None = None) -> dict[str, list[str]]:
    """Settings -> harness labels from ``--harnesses``: ``base``, ``in_space`` (the held-out
    set: 18 of the papers' space, or a spec's ``evaluation.in_space``), ``all`` (every
    configuration but the base), ``out_of_space``, joined with ``+``; or a comma list of
    labels (``S0-T1-O0-C2-W1``, ``oos/shell``); or a design CSV. Labels are of the papers'
    space, or of the experiment ``spec``'s (its out-of-space harnesses too)."""
    return _sets(text, *_spec_space(spec))


def _sets(text: str, harnesses: Any, held_out: int, out_of_space: list[str]
          ) -> dict[str, list[str]]:
    """:func:`harness_sets` over a resolved space (:func:`_spec_space`)."""
    from hscale.design import eval_set, first_order, structured

    space = harnesses.factor_space
    base = space.label(space.base)
    path = Path(text)
    if path.suffix == ".csv" or path.is_file():
        from hscale.design import read_array

        array, _ = read_array(path)
        return _split(space.labels(space.validate(array)), base, space, harnesses.composed())
    if "," in text or "-" in text or text.startswith("oos/") or is_blackbox(text):
        labels = [t.strip() for t in text.split(",")]
        if not all(labels):
            raise HscaleError(f"--harnesses {text!r}: an empty label",
                              "separate labels with single commas, none at either end")
        return _split(labels, base, space, harnesses.composed())
    sets: dict[str, list[str]] = {}
    for part in text.split("+"):
        part = part.strip()
        if not part:
            raise HscaleError(f"--harnesses {text!r}: an empty set name",
                              f"join {', '.join(SETS)} with single + signs")
        if part == Setting.BASE:
            sets[Setting.BASE] = [base]
        elif part == Setting.IN_SPACE:
            sets[Setting.IN_SPACE] = eval_set(space, [structured(space), first_order(space)],
                                        runs=held_out).labels
        elif part == "all":
            sets[Setting.IN_SPACE] = [label for label in space.labels(space.all_configs())
                                if label != base]
        elif part == Setting.OUT_OF_SPACE:
            sets[Setting.OUT_OF_SPACE] = list(out_of_space)
        else:
            raise HscaleError(f"--harnesses: unknown set {part!r}",
                              f"use {', '.join(SETS)} joined with +, a comma list of labels, "
                              "or a design CSV")
    return {str(k): v for k, v in sets.items()}


def _pool_sets(path: str, space: Any) -> tuple[Any, dict[str, list[str]]]:
    """The space with a frozen pool's children composed in, and the ``pool`` setting: its
    base harness and every child, on the validation tasks its router measures on (the
    report's pool tables: locality and complementarity before any training)."""
    from hscale.contracts import POOL_SETTING
    from hscale.train.harness_s import read_pool, with_pool

    pool = read_pool(path)
    space = with_pool(space, pool, f"--harnesses {path}", "give --spec the spec it was "
                      "evolved with")
    return space, {POOL_SETTING: [pool.base, *pool.names]}


def _spec_space(spec: str | None) -> tuple[Any, int, list[str]]:
    """(the harness space, its held-out set's size, the out-of-space harnesses): the papers'
    or an experiment spec's."""
    from hscale.harness import OUT_OF_SPACE, papers_space

    if spec is None:
        return papers_space(), 18, list(OUT_OF_SPACE)
    from hscale.train.planning import out_of_space_names, space_of
    from hscale.train.spec import load_spec

    loaded = load_spec(spec)
    return space_of(loaded), loaded.evaluation.in_space or 18, out_of_space_names(loaded)


def _split(labels: list[str], base: str, space: Any, composed: dict[str, Any]
           ) -> dict[str, list[str]]:
    from hscale.harness import HARNESSES, PRESETS

    sets: dict[str, list[str]] = {}
    for label in labels:
        registry = HARNESSES if is_blackbox(label) else PRESETS \
            if label.startswith("oos/") else None
        if label in composed:
            setting = Setting.OUT_OF_SPACE
        elif registry is not None:  # a black-box harness or a preset
            try:
                registry.check(label)
            except HscaleError as exc:
                raise HscaleError(f"--harnesses: unknown harness {label!r}", exc.hint) from None
            setting = Setting.OUT_OF_SPACE
        else:
            space.parse_labels([label])  # a one-line error for a bad label
            setting = Setting.BASE if label == base else Setting.IN_SPACE
        if label not in sets.setdefault(setting, []):
            sets[setting].append(label)
    return {str(k): v for k, v in sets.items()}


@dataclass(frozen=True)
class Request:
    """What to evaluate: every knob of ``hscale evaluate``."""

    model: str
    harnesses: str = "base+in_space+out_of_space"
    benchmark: str = "builtin"
    path: str | None = None
    tasks: int = 6
    runs: int = 1
    decoding: str = "greedy"  # greedy | sampled | both
    experiment: str = "evaluate"
    label: str | None = None
    max_new_tokens: int = MAX_NEW_TOKENS
    max_batch: int = 32
    served_name: str | None = None
    spec: str | None = None  # an experiment spec whose harness space is evaluated
    ray_address: str | None = None  # black-box episodes as Ray tasks there (not planned)


def label_of(request: Request) -> str:
    """The run's arm name: ``--label``, else the model's name made folder-safe."""
    raw = request.label or Path(request.model.rstrip("/")).name or request.model
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", raw).strip("-.") or "model"
    return name[:64]


def plan_evaluation(request: Request) -> Manifest:
    """The evaluation's manifest (checked before any model loads)."""
    if request.decoding not in ("greedy", "sampled", "both"):
        raise HscaleError(f"--decoding {request.decoding!r}", "use greedy, sampled or both")
    if request.runs < 1 or request.tasks < 1:
        raise HscaleError("--runs and --tasks must be at least 1")
    if request.tasks > MAX_TASKS or request.runs > MAX_RUNS:
        raise HscaleError(f"--tasks {request.tasks} --runs {request.runs}: at most "
                          f"{MAX_TASKS:,} tasks and {MAX_RUNS} runs",
                          "evaluate on fewer tasks (Pass@1 over a few hundred is already "
                          "tight)")
    if not re.fullmatch(NAME, request.experiment):
        raise HscaleError(f"--experiment {request.experiment!r}: not a folder name",
                          "use letters, digits and _ . - (at most 64, starting with a "
                          "letter or digit); --out chooses where it goes")
    source = open_benchmark(request.benchmark, request.path)
    available = source.available("eval")
    tasks = request.tasks if available is None else min(request.tasks, available)
    if tasks < 1:
        raise HscaleError(f"--benchmark {request.benchmark}: no eval tasks in {request.path}",
                          "evaluate on tasks whose split is eval (data_entry.json's split)")
    record = {"name": request.benchmark, "tasks": tasks, "seed": 0, "path": request.path}
    if request.path:
        record.update(split="recorded", label=Path(request.path).stem,
                      content=source.content_hash())
    resolved = _spec_space(request.spec)  # the spec read once
    space = resolved[0]
    if request.harnesses.endswith(".json"):  # a frozen pool: its base harness and children
        space, eval_sets = _pool_sets(request.harnesses, space)
    else:
        eval_sets = _sets(request.harnesses, *resolved)
    passes = {"greedy": 1, "sampled": request.runs, "both": 1 + request.runs}[request.decoding]
    episodes = sum(map(len, eval_sets.values())) * tasks * passes
    if episodes > MAX_EPISODES:
        raise HscaleError(f"{episodes:,} episodes (harnesses x tasks x runs): at most "
                          f"{MAX_EPISODES:,} in one evaluation",
                          "evaluate fewer harnesses, tasks or runs, or split the set")
    none = {"name": "none", "tasks_per_step": 0, "rollouts": 0, "lr": 0.0, "gamma": 1.0,
            "lam": 1.0, "clip_low": 0.0, "clip_high": 0.0}
    return Manifest.build(
        experiment=request.experiment, arm=label_of(request), seed=0,
        space=space.record(), train_harnesses=[], eval_sets=eval_sets,
        assignment={"mode": "none", "k": 1}, algorithm=none,
        budget={"steps": 0, "tasks_per_step": 0, "rollouts_per_task": 0},
        benchmark=record, model=request.model,
        evaluation={"runs": 1 if request.decoding == "greedy" else request.runs,
                    "tasks": tasks, "episodes": None,
                    "decodings": None if request.decoding == "both" else [request.decoding]},
        backend="evaluate")


def evaluate(request: Request, out: str | Path, force: bool = False,
             progress: Callable[[int, int], None] | None = None) -> Path:
    """Evaluate and write the run folder; returns it. A finished evaluation of the same
    manifest is not repeated; one of another manifest is refused unless ``force``."""
    from hscale.harness import is_blackbox
    from hscale.train.blackbox import check_context
    from hscale.train.lm import open_chat_model
    from hscale.train.planning import RunPlan

    manifest = plan_evaluation(request)
    run_dir = Path(out) / manifest.experiment / manifest.arm / "0"
    if _finished(run_dir, manifest):
        return run_dir
    model = open_chat_model(request.model, request.served_name)  # before anything is written
    check_context(model, [j.harness for j in RunPlan(manifest).evaluation()
                          if is_blackbox(j.harness)])
    _own(run_dir, manifest, force)
    plan = RunPlan(manifest)
    jobs = plan.evaluation()
    # the one writer of the result files; nothing read from the folder: what an earlier try
    # finished is in the journal, and the train rows are none
    results = Recorder(run_dir, manifest, read=False)
    saved = _saved(run_dir)
    results.restore(saved)
    finished = {tuple(r[k] for k in _KEY) for r in saved}
    todo = [j for j in jobs if j.key not in finished]
    write_status(run_dir, RunState.RUNNING, manifest.hash)
    if progress is not None:
        progress(len(jobs) - len(todo), len(jobs))
    if todo:
        journal = Journal(run_dir / PARTIAL)
        played = len(saved)

        def done(row: dict[str, Any]) -> None:
            nonlocal played
            journal.append(row)  # on disk before the next episode: kill -9 loses none
            played += 1
            if progress is not None:
                progress(len(jobs) - len(todo) + played - len(finished), len(jobs))

        try:
            with journal:
                play(plan, model, 0, todo, request, done, results)
        except HscaleError as exc:
            write_status(run_dir, RunState.FAILED, manifest.hash, error=exc.message)
            raise
    results.replace_train([])
    results.save()
    (run_dir / PARTIAL).unlink(missing_ok=True)
    write_status(run_dir, RunState.COMPLETED, manifest.hash)
    return run_dir


def play(plan: Any, model: Any, step: int = 0, jobs: list | None = None,
         request: Request | None = None,
         done: Callable[[dict[str, Any]], None] | None = None,
         results: Recorder | None = None) -> list[dict[str, Any]]:
    """Play ``jobs`` (default: the plan's whole evaluation, hscale.train.planning.RunPlan)
    with a chat model: hscale's harnesses through the turn engine (hscale.train.lm.drive),
    black-box CLIs through the real programs; each episode samples from a seed of its own
    (its identity mixed with the manifest's draws). Each episode goes to ``results`` (default:
    a recorder of the run's, never saved) as it ends, and ``done(row)`` hears its row;
    returns the rows at checkpoint ``step`` in the jobs' order."""
    import hscale.train.lm as lm
    from hscale.harness import is_blackbox
    from hscale.train.blackbox import play_clis
    from hscale.train.lm import is_endpoint
    from hscale.train.ray_cluster import play_on_ray

    request = request or Request(model="")
    manifest = plan.manifest
    jobs = plan.evaluation() if jobs is None else jobs
    results = results or Recorder(Path("."), manifest, read=False)
    rows: dict[int, dict[str, Any]] = {}

    def done_of(part: list[int]) -> Callable[[int, Any], None]:
        def finished(index: int, episode: Any) -> None:
            rows[part[index]] = results.evaluated(jobs[part[index]], episode, step)
            if done is not None:
                done(rows[part[index]])
        return finished

    base = int(manifest.rng("evaluate").integers(2**31))
    inside = [i for i, j in enumerate(jobs) if not is_blackbox(j.harness)]
    outside = [i for i, j in enumerate(jobs) if is_blackbox(j.harness)]
    lm.drive(model, [(harness_of(manifest, jobs[i].harness), jobs[i].task, jobs[i].greedy)
                          for i in inside],
                  max_new_tokens=request.max_new_tokens, max_batch=request.max_batch,
                  seeds=[mix(base, *jobs[i].key) for i in inside], done=done_of(inside))
    if outside:
        clis = [(jobs[i].harness, jobs[i].task) for i in outside]
        options = {"greedy": [jobs[i].greedy for i in outside],
                   "served_name": request.served_name, "max_batch": request.max_batch,
                   "max_new_tokens": request.max_new_tokens}
        if request.ray_address is not None:  # the model opened again on each node
            play_on_ray(request.ray_address, request.model, clis, done_of(outside), **options)
        else:  # an endpoint is fronted in proxy mode (its own tool calling)
            play_clis(request.model if is_endpoint(request.model) else model, clis,
                      done_of(outside), **options)
    return [rows[i] for i in sorted(rows)]


def _saved(run_dir: Path) -> list[dict[str, Any]]:
    """Episodes an interrupted evaluation finished, each once (a torn last line is lost);
    one whose CLI failed is played again."""
    from hscale.harness import cli_failed

    rows = {tuple(r.get(k) for k in _KEY): r for r in read_journal(run_dir / PARTIAL)
            if all(k in r for k in _KEY) and not cli_failed(str(r.get("error") or ""))}
    return list(rows.values())


def _finished(run_dir: Path, manifest: Manifest) -> bool:
    """Whether ``run_dir`` holds this very evaluation, complete."""
    try:
        same = Manifest.read(run_dir).hash == manifest.hash
    except HscaleError:
        return False
    return (same and read_status(run_dir).state is RunState.COMPLETED
            and not result_problems(run_dir, manifest))


def _own(run_dir: Path, manifest: Manifest, force: bool) -> None:
    """Claim ``run_dir`` for ``manifest``: a folder of another evaluation is refused (or, with
    ``force``, cleared); the manifest is written before anything else."""
    path = run_dir / "manifest.json"
    if path.is_file():
        try:
            previous = Manifest.read(run_dir).hash
        except HscaleError:
            previous = None
        if previous != manifest.hash:
            if not force:
                raise HscaleError(f"{run_dir}: holds another evaluation (other model, "
                                  "harnesses or tasks)",
                                  "pass --force to replace it, or --label to name this one")
            for name in (EVAL, TRANSCRIPTS, TRAIN, PARTIAL, "status.json"):
                (run_dir / name).unlink(missing_ok=True)
    run_dir.mkdir(parents=True, exist_ok=True)
    manifest.write(run_dir)


__all__ = ["Request", "evaluate", "harness_sets", "label_of", "plan_evaluation", "play"]
