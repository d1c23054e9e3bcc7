"""What ``hscale report`` computed for one runs folder, and what it could not: the tables,
the figures, the headline (hscale.analysis._headline) and the notes; rendered by
hscale.analysis._report_html, written by hscale.analysis._report."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from hscale.analysis._headline import RunSummary
from hscale.analysis._provenance import StudyProvenance
from hscale.analysis._render import Table
from hscale.analysis._verdicts import Verdict
from hscale.contracts import Provenance


@dataclass
class Report:
    """What was written, and what could not be."""

    out: Path
    tables: list[Table]
    figures: dict[str, bytes] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)  # nothing to draw
    failed: dict[str, str] = field(default_factory=dict)  # an error while drawing
    problems: list[str] = field(default_factory=list)
    ordering: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # warnings the statistics raised, counted
    checker_warning: str | None = None  # how often the runs' checkers failed (None: never)
    summary: RunSummary | None = None  # what was run: the first line of the report
    verdicts: list[Verdict] = field(default_factory=list)  # one a headline comparison
    answer: list[str] = field(default_factory=list)  # the first screen's sentences
    pages: dict[str, bytes] = field(default_factory=dict)  # summary.png, summary.pdf
    paper_note: str = ""  # why the papers' numbers are not compared (another setup), or ""
    hypotheses: list = field(default_factory=list)  # the study's confirmatory outcomes
    view_port: int = 8777  # where the episodes links point (hscale view --port)
    # what produced the runs (a line, warnings where they mix code) and this report itself
    provenance: StudyProvenance = field(default_factory=StudyProvenance)
    made_by: Provenance | None = None
