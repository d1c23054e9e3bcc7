"""A spec's benchmarks resolved for its manifests: task counts fixed, content hashed, and the
evaluated tasks checked disjoint from the trained ones, once per plan.

Every problem is an HscaleError naming the spec file and the field (``benchmark.path``,
``evaluation.benchmarks[1].tasks`` ...), raised before anything is written.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hscale.errors import HscaleError, HscaleWarning
from hscale.harness import Benchmark as Source
from hscale.harness import Settings, left_out_summary, open_benchmark, overlap
from hscale.train.spec import BUILTIN_TASKS, Benchmark, ExperimentSpec

_SHOWN = 3  # task ids an overlap error names


@dataclass(frozen=True)
class Sources:
    """Manifest records: the training benchmark's, and the evaluated ones' (None: the
    training benchmark's eval split, ``evaluation.tasks`` of them, as before)."""

    train: dict[str, Any]
    evaluation: list[dict[str, Any]] | None
    eval_tasks: int  # evaluation.tasks as the manifest records it


def resolve_sources(spec: ExperimentSpec, where: str | Path) -> Sources:
    """The records of ``spec``'s benchmarks; errors name ``where`` (the spec file)."""
    train_bench, train_source = spec.benchmark, _open(spec.benchmark, where, "benchmark")
    train = _record(train_bench, train_source, "train", train_bench.tasks, where, "benchmark")
    trained = train_source.tasks(train["tasks"], train["seed"], "train")
    if spec.evaluation.benchmarks is None:
        # at most evaluation.tasks of a data benchmark's eval split (its default of 36 is the
        # builtin world's), so a small task set evaluates on all it holds
        evals, tasks = None, spec.evaluation.tasks
        available = train_source.available("eval")
        if available is not None:
            tasks = min(tasks, max(available, 1))
        _record(train_bench, train_source, "eval", tasks, where, "evaluation.tasks")
        checked = [(train_bench, train_source, tasks, "evaluation.tasks")]
    else:
        evals, checked = [], []
        for i, bench in enumerate(spec.evaluation.benchmarks):
            field = f"evaluation.benchmarks[{i}]"
            source = _open(bench, where, field)
            count = bench.tasks if bench.tasks is not None else (
                spec.evaluation.tasks if source.available("eval") is None else None)
            evals.append(_record(bench, source, "eval", count, where, field))
            checked.append((bench, source, evals[-1]["tasks"], field))
    for bench, source, count, field in checked:
        same = bench.name == train_bench.name and bench.path == train_bench.path
        shared = overlap(trained, source.tasks(count, bench.seed, "eval"), by_id=same)
        if shared:
            raise HscaleError(
                f"{where}: {field}: {len(shared)} evaluated tasks are also training tasks "
                f"({', '.join(shared[:_SHOWN])}{' ...' if len(shared) > _SHOWN else ''})",
                "evaluate on tasks the run does not train on: another split or benchmark")
    return Sources(train, evals, tasks if evals is None else spec.evaluation.tasks)


def _open(bench: Benchmark, where: str | Path, field: str) -> Source:
    try:
        source = open_benchmark(bench.name, bench.path, bench.split,
                                settings=Settings.of(bench))
        source.available("train")  # reads a data benchmark's files: every problem now
    except HscaleError as exc:
        raise HscaleError(f"{where}: {field}: {exc.message}", exc.hint) from None
    left = left_out_summary(getattr(source, "left_out", None) or [])
    if left:
        warnings.warn(f"{where}: {field}: {left}; 'hscale tasks check {bench.path}' lists "
                      "them, strict: true stops on them", HscaleWarning, stacklevel=3)
    if bench.path is not None and hasattr(source, "all_tasks") and not getattr(
            source, "probed", False):
        _probe_checkers(source.all_tasks(), where, field, bench.path)
        source.probed = True  # once per opened benchmark (opening is cached per content)
    return source


PROBED = 8  # tasks whose checker runs on the untouched workspace at validation
REFUSED_SHARE = 0.5  # of those failing, at or above which the benchmark is refused


def _probe_checkers(tasks: list, where: str | Path, field: str, path: str) -> None:
    """Run the checkers of a spread sample of ``tasks`` on their untouched workspaces with
    an empty answer (a reward of 0 is fine; a crash is not). Refuse the benchmark when half
    or more crash: every episode would score 0 whatever the policy did; warn for fewer."""
    from hscale.harness import untouched_reward
    from hscale.harness.tasks import CheckerError, uses_judge

    # judged checkers are not probed: a plan should not pay for LLM calls
    sample = [t for t in tasks if not uses_judge(t.checker)]
    sample = sample[::max(1, len(sample) // PROBED)][:PROBED]
    failed: list[str] = []
    for task in sample:
        try:
            untouched_reward(task)
        except CheckerError as exc:
            failed.append(f"{task.task_id}: {exc.short}")
        except (HscaleError, OSError) as exc:  # input files that cannot be set up
            failed.append(f"{task.task_id}: {getattr(exc, 'message', None) or exc}")
    if not failed:
        return
    message = (f"{where}: {field}: the checkers of {len(failed)} of {len(sample)} sampled "
               f"tasks fail on an untouched workspace, the first: {failed[0]}")
    hint = (f"run 'hscale tasks check {path}' for every task's problem; fix the reward "
            "scripts (or their layout) before training on them")
    if len(failed) >= REFUSED_SHARE * len(sample):
        raise HscaleError(message, hint)
    warnings.warn(f"{message} ({hint})", HscaleWarning, stacklevel=4)


def _record(bench: Benchmark, source: Source, split: str, tasks: int | None,
            where: str | Path, field: str) -> dict[str, Any]:
    """The manifest record of ``bench`` used for ``split``: ``tasks`` checked against what
    the split holds (all of it when None)."""
    available = source.available(split)
    if tasks is None:
        tasks = BUILTIN_TASKS if available is None else available
    if available is not None and tasks > available:
        raise HscaleError(f"{where}: {field}: {tasks} {split} tasks asked for, "
                          f"{bench.path} holds {available}",
                          f"ask for at most {available}, or leave the count out to take all")
    if tasks < 1:
        raise HscaleError(f"{where}: {field}: {bench.path} holds no {split} tasks",
                          "change the benchmark's split (e.g. split: 0.3 holds out 30%)")
    record: dict[str, Any] = {"name": bench.name, "tasks": tasks, "seed": bench.seed,
                              "path": bench.path}
    try:
        content = source.content_hash()
    except HscaleError as exc:
        raise HscaleError(f"{where}: {field}: {exc.message}", exc.hint) from None
    if content is not None or bench.label:
        record.update(split=bench.split, label=bench.column, content=content)
    record.update({k: v for k, v in (("tools", bench.tools), ("limits", bench.limits),
                                     ("strict", bench.strict or None),
                                     ("max_asset_bytes", bench.max_asset_bytes))
                   if v is not None})
    return record


__all__ = ["Sources", "resolve_sources"]
