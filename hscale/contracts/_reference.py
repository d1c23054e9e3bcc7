"""The file-contract reference, written from the contracts themselves (the column tables,
the manifest's and status's models), so the docs show exactly what a run folder holds; the
docs site builds its page from :func:`contracts_reference`."""

from __future__ import annotations

import typing

from pydantic import BaseModel


def contracts_reference() -> str:
    import hscale.contracts as c

    out = ["# File contracts", "",
           "What a run folder `runs/<experiment>/<arm>/<seed>/` holds, generated from "
           "`hscale.contracts`, which every writer and reader imports. Other tools and "
           "notebooks read these files: they are extended, never renamed.", ""]
    tables = [
        (c.SCHEDULE, "One row per training step, task and harness slot.",
         c.SCHEDULE_COLUMNS, {}),
        (c.EVAL, "One row per evaluated episode. `decoding` is `sampled` (runs 0..runs-1) or "
                 "`greedy` (one pass, recorded as run 0); the behaviour counts and the cost "
                 "are NaN where a driver cannot observe them.",
         c.EVAL_COLUMNS, c.EVAL_OPTIONAL),
        (c.TRANSCRIPTS, "One row per eval row, keyed by the run and "
                        + ", ".join(f"`{k}`" for k in c.EVAL_KEY)
                        + ": the episode's wall-clock seconds and its transcript (JSON: "
                          "`messages`, `segments`, `calls`, `tokens`, `final_answer`, "
                          "`termination`, `reward`, `error`, `parse_errors`, `model_calls`).",
         c.TRANSCRIPT_COLUMNS, {}),
        (c.ROLLOUTS, "The training episodes a run keeps (the manifest's `keep_rollouts`); "
                     "`role` is one of " + ", ".join(f"`{r}`" for r in c.ROLLOUT_ROLES) + ".",
         c.ROLLOUT_COLUMNS, {}),
        (c.TRAIN, "One row per training step: `step` (int64), then one float column per "
                  "metric the trainer logs.", {"step": "int64"}, {}),
    ]
    for name, sentence, columns, optional in tables:
        out += [f"## `{name}`", "", sentence, "", "| column | type | |", "|---|---|---|"]
        out += [f"| `{k}` | {t} | required |" for k, t in columns.items()]
        out += [f"| `{k}` | {t} | optional |" for k, t in optional.items()]
        out.append("")
    out += [f"## `{c.MANIFEST}`", "", _first(c.Manifest.__doc__), "",
            *_model_rows(c.Manifest), ""]
    out += [f"## `{c.STATUS}`", "", _first(c.Status.__doc__), "", *_model_rows(c.Status),
            "", "States: " + ", ".join(f"`{s.value}`" for s in c.RunState) + ".", ""]
    out += [f"## `{c.PROVENANCE}`", "", _first(c.Provenance.__doc__) + " One JSON object a "
            "line, appended as the run starts or resumes (the runner), as a Ray task starts on "
            "its node, and as an export writes the run's inputs; a damaged line is skipped and "
            "named by the reader. `hscale report` states a study's provenance and warns when its "
            "runs mix code revisions or these result-shaping packages: "
            + ", ".join(f"`{name}`" for name in c.SHAPING) + ".", "", *_model_rows(c.Provenance),
            "", "`revision` (None where hscale runs from an installed wheel):", "",
            *_model_rows(c.Revision), "", "`hardware`:", "", *_model_rows(c.Hardware), ""]
    return "\n".join(out)


def _model_rows(model: type[BaseModel]) -> list[str]:
    rows = ["| key | type | default |", "|---|---|---|"]
    for name, field in model.model_fields.items():
        made = field.default_factory() if field.default_factory is not None else field.default
        value = getattr(made, "value", made)
        default = "required" if field.is_required() else f"`{value!r}`"
        rows.append(f"| `{name}` | {_type(field.annotation)} | {default} |")
    return rows


def _type(annotation: typing.Any) -> str:
    text = getattr(annotation, "__name__", None) or str(annotation)
    return text.replace("typing.", "").replace("hscale.contracts._records.", "") \
        .replace("hscale.contracts._provenance.", "").replace("|", "or")


def _first(doc: str | None) -> str:
    return " ".join((doc or "").split("\n\n")[0].split()).replace("``", "`")
