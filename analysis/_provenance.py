"""What made a study's numbers: each run's provenance.jsonl (hscale.contracts) read back into
one line when the runs agree, and a warning naming the runs when they were made under other
code: another hscale revision, or another version of a package that shapes results (torch,
veRL, transformers, vLLM, SGLang, numpy), including a run resumed after an upgrade. The
report states it beside its own provenance; the viewer shows a run's.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from hscale.contracts import MANIFEST, PROVENANCE, Provenance, read_provenance

WORK = ("start", "resume", "ray-task")  # the events of a process that ran the run's work
SHOWN = 6  # runs named in a warning before "and N more"


@dataclass
class StudyProvenance:
    """``line``: what produced the study, in one line (empty when no run records it);
    ``warnings``: one line per way its runs differ; ``problems``: damaged lines skipped;
    ``runs``: each run's records (of its current manifest)."""

    line: str = ""
    warnings: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    runs: dict[str, list[Provenance]] = field(default_factory=dict)


def run_records(folder: Path, problems: list[str], where: str = "") -> list[Provenance]:
    """The lines of a run folder that made its results: those of its current manifest (a
    run re-planned with --force started over), the working processes' (an export's only when
    the run was not run by hscale). Damaged lines are named in ``problems``."""
    records, damaged = read_provenance(folder)
    problems.extend(f"{where or folder}/{p}" for p in damaged)
    current = _manifest_hash(folder)
    if current:
        records = [r for r in records if r.manifest_hash in ("", current)]
    worked = [r for r in records if r.event in WORK]
    return worked or records


def _manifest_hash(folder: Path) -> str:
    try:
        value = json.loads((folder / MANIFEST).read_text(encoding="utf-8")).get("hash")
    except (OSError, ValueError, AttributeError):
        return ""
    return value if isinstance(value, str) else ""


def study_provenance(runs: pd.DataFrame, root: Path | None = None) -> StudyProvenance:
    """The provenance of every measured run of ``runs`` (hscale.analysis._load's table)."""
    out = StudyProvenance()
    if runs.empty or "path" not in runs.columns:
        return out
    several = runs["experiment"].astype(str).nunique() > 1
    for row in runs.itertuples():
        if not isinstance(row.path, str) or not row.path:
            continue
        name = f"{row.experiment}/{row.arm}/{row.seed}" if several else f"{row.arm}/{row.seed}"
        out.runs[name] = run_records(Path(row.path), out.problems, name)
    made = {name: records for name, records in out.runs.items() if records}
    if not made:
        if out.runs:
            out.line = (f"No run records its provenance ({PROVENANCE}: runs made before hscale "
                        "recorded it).")
        return out
    out.warnings = _differences(made)
    out.line = _line(made, [n for n, r in out.runs.items() if not r])
    return out


def _differences(made: dict[str, list[Provenance]]) -> list[str]:
    """One warning per result-shaping key (the code, then each package) that takes more than
    one value across the runs, naming the runs of each value; and the runs that changed it
    themselves (resumed under other code)."""
    values: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for name, records in made.items():
        for key, value in _shaping(records).items():
            for each in value:
                values[key][each].append(name)
    warnings = []
    for key, seen in values.items():
        if len(seen) < 2:
            continue
        what = "code revisions" if key == "hscale" else f"versions of {key}"
        listed = "; ".join(f"{key} {value} ({_named(names)})" for value, names in
                           sorted(seen.items(), key=lambda kv: -len(kv[1])))
        mixed = sorted({n for names in seen.values() for n in names
                        if sum(n in other for other in seen.values()) > 1})
        warnings.append(f"The runs were made under {len(seen)} {what}: {listed}"
                        + (f"; resumed under another: {_named(mixed)}" if mixed else "")
                        + ". Their numbers may differ for that alone: rerun them under one "
                          "(hscale rerun checks a run against its manifest).")
    return warnings


def _shaping(records: list[Provenance]) -> dict[str, list[str]]:
    """Each result-shaping key -> the values a run's records give it, in order."""
    out: dict[str, list[str]] = {}
    for record in records:
        for key, value in record.shaping().items():
            if value not in out.setdefault(key, []):
                out[key].append(value)
    return out


def _named(names: list[str]) -> str:
    names = sorted(names)
    shown = ", ".join(names[:SHOWN])
    more = len(names) - SHOWN
    return shown + (f" and {more} more" if more > 0 else "") + \
        (f"; {len(names)} runs" if len(names) > 1 else "")


def _line(made: dict[str, list[Provenance]], unrecorded: list[str]) -> str:
    """``Produced by hscale 0.1.0 (commit abc1234), torch 2.13.0, ..., on AMD EPYC (2
    threads): 10 runs, 2026-12-06``; where the runs differ (the warnings say how) the line
    says how many versions of that there were."""
    records = [r for rs in made.values() for r in rs]
    versions: dict[str, set[str]] = defaultdict(set)
    for record in records:
        for key, value in record.shaping().items():
            versions[key].add(value)
    parts = []
    for key, values in versions.items():
        several = f"{len(values)} {'code revisions' if key == 'hscale' else 'versions of ' + key}"
        parts.append(f"{key} {next(iter(values))}" if len(values) == 1
                     else f"{several} (see the warning)")
    what = ", ".join(parts)
    pythons = sorted({r.python for r in records})
    backends = sorted({r.backend for r in records if r.backend})
    machines = sorted({r.hardware.line() for r in records})
    on = machines[0] if len(machines) == 1 else \
        f"{len(machines)} machines ({'; '.join(machines[:3])}{' ...' if len(machines) > 3 else ''})"
    days = sorted({r.time[:10] for r in records})
    when = days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}"
    line = (f"Produced by {what}, Python {'/'.join(pythons)}"
            + (f", backend {'/'.join(backends)}" if backends else "")
            + f", on {on}: {len(made)} run{'s' * (len(made) != 1)}, {when}")
    if unrecorded:
        line += f"; {len(unrecorded)} more record none ({_named(unrecorded)})"
    return line + "."


def run_rows(records: list[Provenance], problems: list[str]) -> list[tuple[str, str]]:
    """A run's provenance as (what, value) rows for a page: the code and packages of its
    latest start, each start and resume, its command line and backend settings."""
    rows = [("damaged", p) for p in problems]
    if not records:
        return rows + [("provenance", f"not recorded (no {PROVENANCE}: a run made before "
                                      "hscale recorded it)")]
    last = records[-1]
    shaping = _shaping(records)
    rows += [("produced by", last.line())]
    rows += [("code changed", f"{key}: {' then '.join(values)}")
             for key, values in shaping.items() if len(values) > 1]
    rows += [("runs", "; ".join(f"{r.event} {r.time}" for r in records))]
    if last.argv:
        rows.append(("command", " ".join(last.argv)))
    if last.settings:
        rows.append(("settings", json.dumps(last.settings, sort_keys=True)))
    if last.revision and last.revision.origin:
        rows.append(("origin", last.revision.origin))
    return rows
