"""Where a spec's tasks come from (``benchmark:``): a registered kind, the files of a data
kind and how its tasks divide into train and eval; and the field types every spec section
shares (registered names, folder-safe names, size bounds)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, model_validator

from hscale.harness import BENCHMARKS
from hscale.registry import Registry
from hscale.train.spec._space import _Strict


def _named(registry: Registry) -> Any:
    """A string field whose value must be a name in ``registry`` (read at validation time, so
    a user's registered entry is accepted everywhere at once)."""
    return Annotated[str, AfterValidator(registry.validator())]


# Sizes are bounded before any work starts: a typo of 10**9 must not hang the planner.
MAX_TASKS, MAX_SEED = 1_000_000, 2**63 - 1
NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"  # experiment and arm names become folder names

BUILTIN_TASKS = 200  # training tasks of the builtin world when a spec names none


class Benchmark(_Strict):
    """Where tasks come from (harness.task_sources): ``name`` is a registered kind, ``path`` the
    files of a data kind (relative to the spec's folder), ``tasks`` how many of the split to
    use (all of a data benchmark's when left out), ``split`` how its tasks divide into train
    and eval, ``label`` its column in the report (default: the name, or the path's stem)."""

    name: _named(BENCHMARKS) = "builtin"
    """The kind of task source: `builtin` (the generated file world) or a data format read from
    `path` (`clawgym`, `jsonl`, `parquet`, `pinchbench`, `jobbench`)."""
    tasks: int | None = Field(None, ge=1, le=MAX_TASKS)
    """How many tasks of the split to use; all of a data benchmark's when left out (the builtin
    world: 200)."""
    seed: int = Field(0, ge=0, le=MAX_SEED)
    """Seed of the builtin world's task generator and of a data benchmark's split."""
    path: str | None = None
    """Folder or file of a data benchmark, relative to the spec's folder."""
    split: Literal["recorded", "train", "eval"] | Annotated[float, Field(gt=0, lt=1)] = \
        "recorded"
    """How a data benchmark's tasks divide into train and eval: `recorded` (as its files say),
    `train` or `eval` (all in one), or the fraction in (0, 1) held out for eval."""
    label: str | None = Field(None, pattern=NAME)
    """The benchmark's column in eval.parquet and the report (default: its name, or the path's
    stem)."""
    # the episodes' tools and limits (hscale.harness.tasks._task.LIMIT_BOUNDS) in place of the
    # format's; strict: a task that cannot be loaded stops the run instead of being left out
    tools: tuple[str, ...] | None = None
    """The tools an episode gets, in place of the format's (for example `[read, write, run]`)."""
    limits: dict[str, int | float] | None = None
    """Episode limits in place of the format's (`max_turns`, `max_output_chars`, `run_seconds`,
    ...)."""
    strict: bool = False
    """Stop at a task that cannot be loaded, instead of leaving it out and naming it."""
    max_asset_bytes: int | None = Field(None, ge=1, le=1 << 30)  # pinchbench, jobbench files
    """The largest asset file a PinchBench or JobBench task may bring."""

    @model_validator(mode="after")
    def _known_tools_and_limits(self) -> Benchmark:
        from hscale.harness.tasks import limits_problem, tools_problem

        problem = ((self.tools is not None and tools_problem(self.tools))
                   or (self.limits is not None and limits_problem(self.limits)))
        if problem:
            raise ValueError(problem)
        return self

    @model_validator(mode="after")
    def _path_for_data(self) -> Benchmark:
        from hscale.harness import FILE_KINDS

        if self.name in FILE_KINDS and not self.path:
            raise ValueError(f"a {self.name} benchmark reads files: give its path")
        if self.name == "builtin" and (self.path or self.split != "recorded"):
            raise ValueError("the builtin world takes no path or split (its splits are "
                             "disjoint by construction)")
        if self.max_asset_bytes and self.name not in ("pinchbench", "jobbench"):
            raise ValueError("max_asset_bytes is for pinchbench and jobbench assets")
        if self.name == "builtin" and (self.tools or self.limits or self.strict):
            raise ValueError("the builtin world takes no tools, limits or strict (its "
                             "tasks are made for its five tools)")
        return self

    @property
    def column(self) -> str:
        """The benchmark's name in eval.parquet and the report's columns."""
        if self.label:
            return self.label
        return self.name if not self.path else (Path(self.path).stem or self.name)
