"""Display names and orders shared by tables, plots and the report."""

from __future__ import annotations

from collections.abc import Iterable

from hscale.contracts import (
    BASE_MODEL_ARM,  # noqa: F401  (re-exported beside its label)
    Setting,
)

# the name of the starting model's reference run (arm BASE_MODEL_ARM) in tables and plots
BASE_MODEL = "base model (no RL)"
# The base model, then the papers' arms in the order their tables list them; other arms
# follow by name (a name is looked up without a " (...)" qualifier).
ARM_ORDER = ("base model", "single-harness", "first-order-3", "structured-18", "random-18",
             "full-243", "k1",
             "k2", "k4", "repeat-2", "random-assignment", "black-box-sft", "black-box-rl",
             "grpo", "rescue-original", "fixed-mix-claude-code", "meta-harness", "whale",
             "rescue-random", "rescue-4x2", "rescue-rule", "harness-s", "harness-s-rank1")
REFERENCE = "structured-18"  # the main method of Harness Scaling
BASELINE = "single-harness"
OVERALL = "overall"  # the settings pooled: a row of the tables, not a setting of a run
# the reported settings (hscale.contracts.Setting) in the tables' order, then the pool of them
SETTING_ORDER = (*sorted((s for s in Setting if s.reported), key=lambda s: s.order), OVERALL)
SETTING_LABELS = {**{s: s.label for s in SETTING_ORDER[:-1]}, OVERALL: OVERALL}
SOURCE_ORDER = ("measured", "external", "reported")


def method_key(name: str) -> tuple[int, str]:
    """Sort key: papers' arms in table order, then the rest alphabetically."""
    base = str(name).split(" (")[0].split(" [")[0]
    return (ARM_ORDER.index(base) if base in ARM_ORDER else len(ARM_ORDER), str(name))


def order_methods(names: Iterable[str]) -> list[str]:
    return sorted({str(n) for n in names}, key=method_key)


def is_base_model(name: str) -> bool:
    """The base model's row (possibly qualified by its experiment): not an arm of the study."""
    return str(name).startswith(BASE_MODEL)


def default_reference(methods: Iterable[str]) -> str:
    """The arm others are compared with (where the spec names none): Structured-18 when
    present, else a structured arm (structured-36 of a space of your own), else the first
    arm; the base model is never one."""
    ordered = [m for m in order_methods(methods) if not is_base_model(m)]
    if not ordered:
        from hscale.errors import HscaleError

        raise HscaleError("the results hold the base model alone: no trained arm to "
                          "compare", "run the spec's arms (hscale run SPEC) into the same "
                          "folder, or report the folder that holds them")
    for name in ordered:
        if name.split(" (")[0] == REFERENCE:
            return name
    structured = [n for n in ordered if n.split(" (")[0].startswith("structured")]
    return structured[0] if structured else ordered[0]


def setting_label(setting: str) -> str:
    return SETTING_LABELS.get(setting, setting)


def order_key(values: Iterable[str], order: tuple[str, ...]) -> dict[str, int]:
    """Rank of each value: listed ones by ``order``, the rest after them by name."""
    rest = sorted({str(v) for v in values} - set(order))
    return {name: i for i, name in enumerate([*order, *rest])}
