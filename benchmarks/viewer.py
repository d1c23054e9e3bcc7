"""``hscale view`` on a large study: 100,000 evaluated episodes (9 arms x 3 seeds x 3 runs x
21 harnesses x ~59 tasks) written as run folders, each with a transcripts.parquet of
demo-sized transcripts. Times opening the study (the index of every eval row), a filtered
table page, an episode page (its run's transcripts read on demand) and a side-by-side pair,
beside what a notebook user does instead: pandas reading every eval.parquet and filtering.
Targets: the study opens in under 5 s and every page renders in under 1 s.

    python benchmarks/viewer.py [--rows 100000] [--runs runs/demo]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from hscale.analysis import Study
from hscale.analysis._synthetic import synthetic_episodes, write_runs
from hscale.analysis._view_app import compare_page, episode_page, table_page
from hscale.contracts import TRANSCRIPT_COLUMNS, TRANSCRIPTS
from hscale.files import write_parquet

ARMS = ("single-harness", "first-order-3", "structured-18", "random-18", "full-243", "k1", "k4",
        "repeat-2", "random-assignment")
OPEN_S, PAGE_S = 5.0, 1.0


def timed(label: str, fn):
    start = time.perf_counter()
    value = fn()
    seconds = time.perf_counter() - start
    print(f"{label:58} {seconds:7.3f} s")
    return value, seconds


def transcript(i: int) -> str:
    """A transcript the size of a demo episode's (system prompt, task, four turns)."""
    turns = [["assistant", f"<tool_call> {{\"name\": \"read_file\", \"arguments\": "
              f"{{\"path\": \"f{k}.txt\"}}}} </tool_call>"] for k in range(4)]
    messages = [["system", "you do file tasks with tools, one tool call per turn. " * 6],
                ["user", f"follow the notes from f0.txt to the last file ({i})."]]
    for turn in turns:
        messages += [turn, ["tool", "see the next file " * 3]]
    return json.dumps({"messages": messages, "segments": [[[], 0, 2, len(messages)]],
                       "calls": [], "tokens": [[400, 15]] * 4, "final_answer": "rice",
                       "termination": "answer", "reward": 1.0, "error": "",
                       "parse_errors": 0, "model_calls": []})


def add_transcripts(root: Path) -> None:
    for path in root.rglob("eval.parquet"):
        rows = pd.read_parquet(path)
        if "decoding" not in rows:
            rows["decoding"] = "sampled"
        kept = rows.assign(seconds=0.5, transcript=[transcript(i) for i in range(len(rows))])
        write_parquet(path.with_name(TRANSCRIPTS), kept[list(TRANSCRIPT_COLUMNS)])


def measure(root: Path) -> dict[str, float]:
    files = sorted(root.rglob("eval.parquet"))
    _, pandas_s = timed(f"pandas: read {len(files)} eval.parquet, filter (what users do)",
                        lambda: (lambda f: f[(f.arm == "k1") & ~f.success])(
                            pd.concat([pd.read_parquet(p) for p in files])))
    study, open_s = timed("hscale view: open the study", lambda: Study(root))
    print(f"  {len(study):,} episodes in {len(study.folders)} run folders")
    _, table_s = timed("table page, filtered (arm=k1, failed)",
                       lambda: table_page(study, {"arm": "k1", "outcome": "failed"}))
    _, deep_s = timed("table page 40 of the unfiltered table",
                      lambda: table_page(study, {"page": "40"}))
    index = len(study) // 2
    _, episode_s = timed("episode page (its run's transcripts read)",
                         lambda: episode_page(study, index))
    other = int(study.siblings(index).index[0])
    _, pair_s = timed("side-by-side pair", lambda: compare_page(study, index, other))
    pages = max(table_s, deep_s, episode_s, pair_s)
    print(f"open / pandas read: {open_s / pandas_s:.2f}x; slowest page {pages:.3f} s")
    ok = open_s < OPEN_S and pages < PAGE_S
    print(("PASS" if ok else "MISS") + f": open < {OPEN_S} s, every page < {PAGE_S} s")
    return {"open_s": open_s, "pages_s": pages, "ok": ok}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--runs", type=Path, help="Measure a runs folder of yours instead "
                                                  "(e.g. runs/demo)")
    args = parser.parse_args(argv)
    if args.runs is not None:
        return 0 if measure(args.runs)["ok"] else 1
    tasks = max(1, round(args.rows / (len(ARMS) * 3 * 3 * 21)))
    probs = {arm: 0.30 + 0.02 * i for i, arm in enumerate(ARMS)}
    episodes = synthetic_episodes(probs, arms=ARMS, tasks=tasks)
    with tempfile.TemporaryDirectory() as tmp:
        timed(f"write {len(ARMS) * 3} run folders", lambda: write_runs(tmp, episodes))
        timed("add a transcripts.parquet to each", lambda: add_transcripts(Path(tmp)))
        found = measure(Path(tmp) / "synthetic")
    return 0 if found["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
