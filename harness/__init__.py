"""What a harness is: the harness space and its components, the task sources and the task
format, the sandboxed environment, the turn engine and its drivers (run_episode here; the
embedded sampler and the veRL agent loop elsewhere).

Names are imported on first use, so ``import hscale.harness.space`` (as analysis does) stays
light; heavy dependencies (torch, veRL) are imported only by the modules that use them.
"""

from __future__ import annotations

from hscale.lazy import lazy_exports

_EXPORTS = {
    "BENCHMARKS": "hscale.harness.task_sources",
    "Episode": "hscale.harness.engine",
    "Generation": "hscale.harness.engine",
    "Termination": "hscale.harness.engine",
    "TurnEngine": "hscale.harness.engine",
    "Env": "hscale.harness.env",
    "Harness": "hscale.harness.harness",
    "OpenAIChatPolicy": "hscale.harness.http_policy",
    "Policy": "hscale.harness.loop",
    "run_episode": "hscale.harness.loop",
    "DoNothing": "hscale.harness.policies",
    "NoisyOracle": "hscale.harness.policies",
    "Oracle": "hscale.harness.policies",
    "BASE": "hscale.harness.space",
    "COMPONENTS": "hscale.harness.space",
    "OUT_OF_SPACE": "hscale.harness.space",
    "PRESETS": "hscale.harness.space",
    "harness_space": "hscale.harness.space",
    "Task": "hscale.harness.tasks",
    "load_tasks": "hscale.harness.tasks",
    "write_task_folder": "hscale.harness.tasks",
    "Message": "hscale.harness.types",
    "ToolCall": "hscale.harness.types",
    "ToolResult": "hscale.harness.types",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
