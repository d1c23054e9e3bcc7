"""What a harness is: the harness space and its components, the task sources and the task
format, the sandboxed environment, the turn engine and its drivers (run_episode here; the
embedded sampler and the veRL agent loop elsewhere).

Names are imported on first use, so ``import hscale.harness._space`` (as analysis does) stays
light; heavy dependencies (torch, veRL) are imported only by the modules that use them.
"""

from typing import TYPE_CHECKING

from hscale.lazy import on_first_use

from ._transcript import cost, transcript
from ._types import Message, ParseError, ToolCall, ToolResult

if TYPE_CHECKING:  # numpy, pandas, pydantic: imported on first use
    from ._behaviour import behaviour
    from ._blackbox import HARNESSES, install, is_blackbox, require_installed, version_of
    from ._blackbox_run import Served, cli_failed, new_session, run_blackbox
    from ._capabilities import prefetch
    from ._edits import (
        Edit,
        EditError,
        apply,
        build,
        canonical,
        child_name,
        components_of,
        problem,
    )
    from ._engine import (
        DEFAULT_MAX_TURNS,
        EPISODE_TURNS,
        Episode,
        Generation,
        Termination,
        TurnEngine,
    )
    from ._env import Env, Limits, untouched_reward
    from ._finishing import Finisher, submit_all
    from ._harness import Harness, harness_named
    from ._http_policy import OpenAIChatPolicy, probe
    from ._loop import Policy, run_episode
    from ._netns import isolation
    from ._outcome import outcome
    from ._policies import DoNothing, NoisyOracle, Oracle, demonstrations
    from ._space import (
        BASE,
        COMPONENTS,
        COMPONENTS_OF_THE_PAPERS,
        FACTOR_COMPONENTS,
        OUT_OF_SPACE,
        PRESETS,
        component_aliases,
        factor_space,
    )
    from ._spaces import (
        HarnessSpace,
        Level,
        SpaceFactor,
        from_a_file_plugin,
        from_record,
        is_file_source,
        papers_space,
        plugin_of,
        plugin_path,
        sha256_of,
        stage_plugins,
    )
    from ._task_sources import (
        BENCHMARKS,
        FILE_KINDS,
        Benchmark,
        BuiltinWorld,
        Settings,
        TaskFiles,
        benchmark_of,
        fingerprint,
        left_out_summary,
        open_benchmark,
        overlap,
    )
    from ._tokenizer import WordTokenizer, tokenizer
    from ._world import generate
    from .tasks import Task, load_tasks, write_task_folder

__all__ = [
    "BASE",
    "BENCHMARKS",
    "Benchmark",
    "BuiltinWorld",
    "COMPONENTS",
    "COMPONENTS_OF_THE_PAPERS",
    "DEFAULT_MAX_TURNS",
    "DoNothing",
    "EPISODE_TURNS",
    "Edit",
    "EditError",
    "Env",
    "Episode",
    "FACTOR_COMPONENTS",
    "FILE_KINDS",
    "Finisher",
    "Generation",
    "HARNESSES",
    "Harness",
    "HarnessSpace",
    "Level",
    "Limits",
    "Message",
    "NoisyOracle",
    "OUT_OF_SPACE",
    "OpenAIChatPolicy",
    "ParseError",
    "Oracle",
    "PRESETS",
    "Policy",
    "Served",
    "Settings",
    "SpaceFactor",
    "Task",
    "TaskFiles",
    "Termination",
    "ToolCall",
    "ToolResult",
    "TurnEngine",
    "WordTokenizer",
    "apply",
    "behaviour",
    "benchmark_of",
    "build",
    "canonical",
    "child_name",
    "cli_failed",
    "component_aliases",
    "components_of",
    "cost",
    "demonstrations",
    "factor_space",
    "fingerprint",
    "from_a_file_plugin",
    "from_record",
    "generate",
    "harness_named",
    "install",
    "is_blackbox",
    "is_file_source",
    "isolation",
    "left_out_summary",
    "load_tasks",
    "new_session",
    "open_benchmark",
    "outcome",
    "overlap",
    "papers_space",
    "plugin_of",
    "plugin_path",
    "prefetch",
    "probe",
    "problem",
    "require_installed",
    "run_blackbox",
    "run_episode",
    "sha256_of",
    "stage_plugins",
    "submit_all",
    "tokenizer",
    "transcript",
    "untouched_reward",
    "version_of",
    "write_task_folder",
]

__getattr__ = on_first_use(__name__, __file__)
