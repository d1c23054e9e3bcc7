"""Results analysis: load run folders, Pass@k tables in the papers' layouts, statistics that
respect task clustering, plots, and the ``hscale report`` HTML report (see DESIGN.md).

Names are imported on first use, so ``import analysis`` does not pull in matplotlib, scipy
or statsmodels.
"""

from __future__ import annotations

from hscale.lazy import lazy_exports

_EXPORTS = {
    "Results": "analysis.load",
    "load_results": "analysis.load",
    "find_run_dirs": "analysis.load",
    "read_reported": "analysis.external",
    "pass_at_k": "analysis.passk",
    "pass1": "analysis.passk",
    "passk": "analysis.passk",
    "run_scores": "analysis.passk",
    "Table": "analysis.render",
    "to_markdown": "analysis.render",
    "to_latex": "analysis.render",
    "to_html": "analysis.render",
    "all_tables": "analysis.tables",
    "compute_cells": "analysis.tables",
    "settings_table": "analysis.tables",
    "out_of_space_table": "analysis.tables",
    "base_harness_table": "analysis.tables",
    "ablation_table": "analysis.tables",
    "harness_s_table": "analysis.tables",
    "measured_ordering": "analysis.tables",
    "bootstrap_ci": "analysis.stats",
    "cluster_bootstrap": "analysis.stats",
    "compare_arms": "analysis.stats",
    "holm": "analysis.stats",
    "paired_differences": "analysis.stats",
    "sign_flip_test": "analysis.stats",
    "main_effects": "analysis.effects",
    "logit_effects": "analysis.effects",
    "distance_to_training": "analysis.effects",
    "success_by_distance": "analysis.effects",
    "estimate_weights": "analysis.weights",
    "FIGURES": "analysis.plots",
    "write_report": "analysis.report",
    "demo_like": "analysis.synthetic",
    "split_decoding": "analysis.load",
    "synthetic_episodes": "analysis.synthetic",
    "write_runs": "analysis.synthetic",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
