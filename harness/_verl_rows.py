"""veRL's rows for hscale's agent loop (hscale.harness.verl_agent_loop): one a (task,
harness) pair, everything a rollout worker needs in ``extra_info``."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hscale.contracts import EXTRA_INFO, RowInfo, is_blackbox
from hscale.errors import HscaleError
from hscale.harness._engine import DEFAULT_MAX_TURNS
from hscale.harness._harness import harness_named
from hscale.harness._types import Message
from hscale.harness.tasks import Task, task_to_row

if TYPE_CHECKING:
    import pandas as pd

    from hscale.harness._spaces import HarnessSpace

AGENT_NAME = "hscale_harness"  # the agent loop's name in veRL's registry


COLUMNS = ["data_source", "prompt", "ability", "reward_model", "agent_name", EXTRA_INFO]


def to_verl_rows(tasks: Iterable[Task], harness_labels: Sequence[str] | Mapping[str, Sequence[str]],
                 split: str, *, data_source: str = "hscale",
                 max_turns: int = DEFAULT_MAX_TURNS, space: HarnessSpace | None = None
                 ) -> pd.DataFrame:
    """veRL rows, one per (task, harness): every label for every task, or per task id;
    labels of ``space`` (the papers' when None: a described space rides in
    ``extra_info.space``, so every rollout worker builds the same harnesses and loads the
    same plugins).

    ``prompt`` holds the harness's initial messages; ``extra_info.task`` is the task row as
    JSON (parquet would merge the differing keys of ``input_files`` across rows into nulls);
    ``reward_model.ground_truth`` is the checker spec as JSON (the agent loop scores, not
    veRL's reward function).
    """
    import pandas as pd

    rows = [{**row, EXTRA_INFO: info.write()} for row, info in verl_records(
        tasks, harness_labels, split, data_source=data_source, max_turns=max_turns,
        space=space)]
    return pd.DataFrame(rows, columns=COLUMNS)


def verl_records(tasks: Iterable[Task],
                 harness_labels: Sequence[str] | Mapping[str, Sequence[str]], split: str, *,
                 data_source: str = "hscale", max_turns: int = DEFAULT_MAX_TURNS,
                 space: HarnessSpace | None = None) -> list[tuple[dict[str, Any], RowInfo]]:
    """:func:`to_verl_rows`' rows as (the row but its ``extra_info``, its RowInfo)."""
    if not isinstance(split, str) or not split:
        raise HscaleError(f"split must be a non-empty string, got {split!r}", "use 'train'")
    if isinstance(harness_labels, str):
        raise HscaleError(f"harness_labels must be a list of labels, got {harness_labels!r}",
                          f"write [{harness_labels!r}]")
    out: list[tuple[dict[str, Any], RowInfo]] = []
    fresh: dict[str, Any] = {}  # one copy a label: start() resets its state for each task
    carried = (space.to_json() if space is not None and (space.described or space.outside)
               else None)
    for task in tasks:
        labels = (harness_labels.get(task.task_id) if isinstance(harness_labels, Mapping)
                  else harness_labels)
        if not labels:
            raise HscaleError(f"task {task.task_id}: no harness labels",
                              "map every task id to at least one harness label")
        task_json = json.dumps(task_to_row(task), sort_keys=True)
        truth = json.dumps(task.checker, sort_keys=True)
        for label in labels:
            if is_blackbox(label):  # a real CLI renders its own prompt: the query
                prompt = [{"role": "user", "content": task.user_query}]
            else:
                h = fresh.get(label) or fresh.setdefault(label,
                                                         harness_named(label, space).fresh())
                prompt = dicts_of(h.start(task.user_query, task.tools))
            out.append(({"data_source": data_source, "prompt": prompt,
                         "ability": task.category,
                         "reward_model": {"style": "rule", "ground_truth": truth},
                         "agent_name": AGENT_NAME},
                        RowInfo(index=len(out), split=split, harness=label,
                                task_id=task.task_id, task=task_json,
                                max_turns=int(max_turns), space=carried)))
    return out


def dicts_of(messages: Sequence[Message]) -> list[dict[str, str]]:
    return [{"role": m.role, "content": m.content} for m in messages]
