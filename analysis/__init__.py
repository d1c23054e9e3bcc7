"""Results analysis: load run folders, Pass@k tables in the papers' layouts, statistics with
training runs and tasks as sources of variance (one model for intervals, tests, MDEs and
power, checked on planted studies), plots, and the ``hscale report`` HTML report.

Names are imported on first use, so ``import analysis`` does not pull in matplotlib, scipy
or statsmodels.
"""

from __future__ import annotations

from hscale.lazy import lazy_exports

_EXPORTS = {
    "Results": "hscale.analysis.load",
    "load_results": "hscale.analysis.load",
    "find_run_dirs": "hscale.analysis.load",
    "read_reported": "hscale.analysis.external",
    "pass_at_k": "hscale.analysis.passk",
    "pass1": "hscale.analysis.passk",
    "passk": "hscale.analysis.passk",
    "run_scores": "hscale.analysis.passk",
    "Table": "hscale.analysis.render",
    "to_markdown": "hscale.analysis.render",
    "to_latex": "hscale.analysis.render",
    "to_html": "hscale.analysis.render",
    "all_tables": "hscale.analysis.tables",
    "compute_cells": "hscale.analysis.tables",
    "settings_table": "hscale.analysis.tables",
    "out_of_space_table": "hscale.analysis.tables",
    "base_harness_table": "hscale.analysis.tables",
    "ablation_table": "hscale.analysis.tables",
    "harness_s_table": "hscale.analysis.tables",
    "measured_ordering": "hscale.analysis.tables",
    "bootstrap_ci": "hscale.analysis.stats",
    "cluster_bootstrap": "hscale.analysis.stats",
    "compare_arms": "hscale.analysis.stats",
    "holm": "hscale.analysis.stats",
    "paired_differences": "hscale.analysis.stats",
    "rl_gains": "hscale.analysis.stats",
    "arm_intervals": "hscale.analysis.stats",
    "contrasts": "hscale.analysis.components",
    "StudySize": "hscale.analysis.components",
    "calibrate": "hscale.analysis.calibration",
    "planted": "hscale.analysis.calibration",
    "main_effects": "hscale.analysis.effects",
    "logit_effects": "hscale.analysis.effects",
    "distance_to_training": "hscale.analysis.effects",
    "success_by_distance": "hscale.analysis.effects",
    "estimate_weights": "hscale.analysis.weight_estimates",
    "FIGURES": "hscale.analysis.plots",
    "write_report": "hscale.analysis.report",
    "demo_like": "hscale.analysis.synthetic",
    "split_decoding": "hscale.analysis.load",
    "synthetic_episodes": "hscale.analysis.synthetic",
    "write_runs": "hscale.analysis.synthetic",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
