"""The public API of hscale.analysis (read lazily by __init__.py)."""

from ._bootstrap import (
    bootstrap_ci as bootstrap_ci,
)
from ._bootstrap import (
    cluster_bootstrap as cluster_bootstrap,
)
from ._calibration import (
    planted as planted,
)
from ._component_tests import (
    component_effects as component_effects,
)
from ._components import (
    COMPONENTS as COMPONENTS,
)
from ._components import (
    LABELS as LABELS,
)
from ._components import (
    Components as Components,
)
from ._components import (
    StudySize as StudySize,
)
from ._components import (
    pooled as pooled,
)
from ._effect_tables import (
    distance_table as distance_table,
)
from ._effect_tables import (
    effects_table as effects_table,
)
from ._effect_tables import (
    tests_table as tests_table,
)
from ._effects import (
    distance_to_training as distance_to_training,
)
from ._effects import (
    main_effects as main_effects,
)
from ._effects import (
    success_by_distance as success_by_distance,
)
from ._efficiency import (
    efficiency_frame as efficiency_frame,
)
from ._external import (
    read_reported as read_reported,
)
from ._hypotheses import (
    judge_hypotheses as judge_hypotheses,
)
from ._hypotheses import (
    open_arms as open_arms,
)
from ._hypotheses import (
    spending_levels as spending_levels,
)
from ._hypotheses import (
    studies_of as studies_of,
)
from ._load import (
    Results as Results,
)
from ._load import (
    find_run_dirs as find_run_dirs,
)
from ._load import (
    load_results as load_results,
)
from ._load import (
    split_decoding as split_decoding,
)
from ._naming import (
    BASE_MODEL as BASE_MODEL,
)
from ._naming import (
    default_reference as default_reference,
)
from ._passk import (
    pass1 as pass1,
)
from ._passk import (
    pass_at_k as pass_at_k,
)
from ._passk import (
    passk as passk,
)
from ._passk import (
    run_scores as run_scores,
)
from ._planning import (
    Question as Question,
)
from ._planning import (
    equal_plan as equal_plan,
)
from ._planning import (
    plan_power as plan_power,
)
from ._planning import (
    plan_seeds as plan_seeds,
)
from ._planning import (
    question_se as question_se,
)
from ._planning import (
    scaled_questions as scaled_questions,
)
from ._planning import (
    staged_design as staged_design,
)
from ._planning import (
    variance_interval as variance_interval,
)
from ._planted import (
    check as check,
)
from ._planted import (
    plant as plant,
)
from ._plots import (
    FIGURES as FIGURES,
)
from ._plots import (
    NoData as NoData,
)
from ._plots import (
    Options as Options,
)
from ._pool_properties import (
    complementarity as complementarity,
)
from ._pool_properties import (
    locality as locality,
)
from ._power import (
    design_from_spec as design_from_spec,
)
from ._power import (
    mde as mde,
)
from ._render import (
    Table as Table,
)
from ._render import (
    to_html as to_html,
)
from ._render import (
    to_latex as to_latex,
)
from ._render import (
    to_markdown as to_markdown,
)
from ._report import (
    build_report as build_report,
)
from ._report import (
    ordering_statements as ordering_statements,
)
from ._report import (
    write_report as write_report,
)
from ._report_data import (
    Report as Report,
)
from ._stats import (
    arm_intervals as arm_intervals,
)
from ._stats import (
    compare as compare,
)
from ._stats import (
    compare_arms as compare_arms,
)
from ._stats import (
    holm as holm,
)
from ._stats import (
    paired_blocks as paired_blocks,
)
from ._stats import (
    paired_differences as paired_differences,
)
from ._stats import (
    rl_gains as rl_gains,
)
from ._synthetic import (
    demo_like as demo_like,
)
from ._synthetic import (
    synthetic_episodes as synthetic_episodes,
)
from ._synthetic import (
    write_runs as write_runs,
)
from ._tables import (
    ablation_table as ablation_table,
)
from ._tables import (
    all_tables as all_tables,
)
from ._tables import (
    base_harness_table as base_harness_table,
)
from ._tables import (
    compute_cells as compute_cells,
)
from ._tables import (
    harness_s_table as harness_s_table,
)
from ._tables import (
    measured_ordering as measured_ordering,
)
from ._tables import (
    out_of_space_table as out_of_space_table,
)
from ._tables import (
    settings_table as settings_table,
)
from ._view_app import (
    build_view_app as build_view_app,
)
from ._view_app import (
    export_html as export_html,
)
from ._view_app import (
    is_export as is_export,
)
from ._view_data import (
    Study as Study,
)
from ._weight_estimates import (
    estimate_weights as estimate_weights,
)

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
