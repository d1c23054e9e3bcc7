"""Results analysis: load run folders, Pass@k tables in the papers' layouts, statistics with
training runs and tasks as sources of variance (one model for intervals, tests, MDEs and
power, checked on planted studies), plots, and the ``hscale report`` HTML report.

Names are imported on first use, so ``import analysis`` does not pull in matplotlib, scipy
or statsmodels.
"""

from typing import TYPE_CHECKING

from hscale.lazy import on_first_use

if TYPE_CHECKING:  # numpy, pandas, pydantic, scipy: imported on first use
    from ._bootstrap import bootstrap_ci, cluster_bootstrap
    from ._calibration import planted
    from ._component_tests import component_effects
    from ._components import COMPONENTS, LABELS, Components, StudySize, pooled
    from ._effect_tables import distance_table, effects_table, tests_table
    from ._effects import distance_to_training, main_effects, success_by_distance
    from ._efficiency import efficiency_frame
    from ._external import read_reported
    from ._hypotheses import judge_hypotheses, open_arms, spending_levels, studies_of
    from ._load import Results, find_run_dirs, load_results, split_decoding
    from ._naming import BASE_MODEL, default_reference
    from ._passk import pass1, pass_at_k, passk, run_scores
    from ._planning import (
        Question,
        equal_plan,
        plan_power,
        plan_seeds,
        question_se,
        scaled_questions,
        staged_design,
        variance_interval,
    )
    from ._planted import check, plant
    from ._plots import FIGURES, NoData, Options
    from ._pool_properties import complementarity, locality
    from ._power import design_from_spec, mde
    from ._render import Table, to_html, to_latex, to_markdown
    from ._report import build_report, ordering_statements, write_report
    from ._report_data import Report
    from ._stats import (
        arm_intervals,
        compare,
        compare_arms,
        holm,
        paired_blocks,
        paired_differences,
        rl_gains,
    )
    from ._synthetic import demo_like, synthetic_episodes, write_runs
    from ._tables import (
        ablation_table,
        all_tables,
        base_harness_table,
        compute_cells,
        harness_s_table,
        measured_ordering,
        out_of_space_table,
        settings_table,
    )
    from ._view_app import build_view_app, export_html, is_export
    from ._view_data import Study
    from ._weight_estimates import estimate_weights

__all__ = [
    "BASE_MODEL",
    "COMPONENTS",
    "Components",
    "FIGURES",
    "LABELS",
    "NoData",
    "Options",
    "Question",
    "Report",
    "Results",
    "Study",
    "StudySize",
    "Table",
    "ablation_table",
    "all_tables",
    "arm_intervals",
    "base_harness_table",
    "bootstrap_ci",
    "build_report",
    "build_view_app",
    "check",
    "cluster_bootstrap",
    "compare",
    "compare_arms",
    "complementarity",
    "component_effects",
    "compute_cells",
    "default_reference",
    "demo_like",
    "design_from_spec",
    "distance_table",
    "distance_to_training",
    "effects_table",
    "efficiency_frame",
    "equal_plan",
    "estimate_weights",
    "export_html",
    "find_run_dirs",
    "harness_s_table",
    "holm",
    "is_export",
    "judge_hypotheses",
    "load_results",
    "locality",
    "main_effects",
    "mde",
    "measured_ordering",
    "open_arms",
    "ordering_statements",
    "out_of_space_table",
    "paired_blocks",
    "paired_differences",
    "pass1",
    "pass_at_k",
    "passk",
    "plan_power",
    "plan_seeds",
    "plant",
    "planted",
    "pooled",
    "question_se",
    "read_reported",
    "rl_gains",
    "run_scores",
    "scaled_questions",
    "settings_table",
    "spending_levels",
    "split_decoding",
    "staged_design",
    "studies_of",
    "success_by_distance",
    "synthetic_episodes",
    "tests_table",
    "to_html",
    "to_latex",
    "to_markdown",
    "variance_interval",
    "write_report",
    "write_runs",
]

__getattr__ = on_first_use(__name__, __file__)
