"""The public API of hscale.harness (read lazily by __init__.py)."""

from ._behaviour import (
    behaviour as behaviour,
)
from ._blackbox import (
    HARNESSES as HARNESSES,
)
from ._blackbox import (
    install as install,
)
from ._blackbox import (
    is_blackbox as is_blackbox,
)
from ._blackbox import (
    require_installed as require_installed,
)
from ._blackbox import (
    version_of as version_of,
)
from ._blackbox_run import (
    Served as Served,
)
from ._blackbox_run import (
    cli_failed as cli_failed,
)
from ._blackbox_run import (
    new_session as new_session,
)
from ._blackbox_run import (
    run_blackbox as run_blackbox,
)
from ._capabilities import (
    prefetch as prefetch,
)
from ._edits import (
    Edit as Edit,
)
from ._edits import (
    EditError as EditError,
)
from ._edits import (
    apply as apply,
)
from ._edits import (
    build as build,
)
from ._edits import (
    canonical as canonical,
)
from ._edits import (
    child_name as child_name,
)
from ._edits import (
    components_of as components_of,
)
from ._edits import (
    problem as problem,
)
from ._engine import (
    DEFAULT_MAX_TURNS as DEFAULT_MAX_TURNS,
)
from ._engine import (
    EPISODE_TURNS as EPISODE_TURNS,
)
from ._engine import (
    Episode as Episode,
)
from ._engine import (
    Generation as Generation,
)
from ._engine import (
    Termination as Termination,
)
from ._engine import (
    TurnEngine as TurnEngine,
)
from ._env import (
    Env as Env,
)
from ._env import (
    Limits as Limits,
)
from ._env import (
    untouched_reward as untouched_reward,
)
from ._finishing import (
    Finisher as Finisher,
)
from ._finishing import (
    submit_all as submit_all,
)
from ._harness import (
    Harness as Harness,
)
from ._harness import (
    harness_named as harness_named,
)
from ._http_policy import (
    OpenAIChatPolicy as OpenAIChatPolicy,
)
from ._http_policy import (
    probe as probe,
)
from ._loop import (
    Policy as Policy,
)
from ._loop import (
    run_episode as run_episode,
)
from ._netns import (
    isolation as isolation,
)
from ._outcome import (
    outcome as outcome,
)
from ._policies import (
    DoNothing as DoNothing,
)
from ._policies import (
    NoisyOracle as NoisyOracle,
)
from ._policies import (
    Oracle as Oracle,
)
from ._policies import (
    demonstrations as demonstrations,
)
from ._space import (
    BASE as BASE,
)
from ._space import (
    COMPONENTS as COMPONENTS,
)
from ._space import (
    COMPONENTS_OF_THE_PAPERS as COMPONENTS_OF_THE_PAPERS,
)
from ._space import (
    FACTOR_COMPONENTS as FACTOR_COMPONENTS,
)
from ._space import (
    OUT_OF_SPACE as OUT_OF_SPACE,
)
from ._space import (
    PRESETS as PRESETS,
)
from ._space import (
    component_aliases as component_aliases,
)
from ._space import (
    factor_space as factor_space,
)
from ._spaces import (
    HarnessSpace as HarnessSpace,
)
from ._spaces import (
    Level as Level,
)
from ._spaces import (
    SpaceFactor as SpaceFactor,
)
from ._spaces import (
    from_a_file_plugin as from_a_file_plugin,
)
from ._spaces import (
    from_record as from_record,
)
from ._spaces import (
    is_file_source as is_file_source,
)
from ._spaces import (
    papers_space as papers_space,
)
from ._spaces import (
    plugin_of as plugin_of,
)
from ._spaces import (
    plugin_path as plugin_path,
)
from ._spaces import (
    sha256_of as sha256_of,
)
from ._spaces import (
    stage_plugins as stage_plugins,
)
from ._task_sources import (
    BENCHMARKS as BENCHMARKS,
)
from ._task_sources import (
    FILE_KINDS as FILE_KINDS,
)
from ._task_sources import (
    Benchmark as Benchmark,
)
from ._task_sources import (
    BuiltinWorld as BuiltinWorld,
)
from ._task_sources import (
    Settings as Settings,
)
from ._task_sources import (
    TaskFiles as TaskFiles,
)
from ._task_sources import (
    benchmark_of as benchmark_of,
)
from ._task_sources import (
    fingerprint as fingerprint,
)
from ._task_sources import (
    left_out_summary as left_out_summary,
)
from ._task_sources import (
    open_benchmark as open_benchmark,
)
from ._task_sources import (
    overlap as overlap,
)
from ._tokenizer import (
    WordTokenizer as WordTokenizer,
)
from ._tokenizer import (
    tokenizer as tokenizer,
)
from ._transcript import (
    cost as cost,
)
from ._transcript import (
    transcript as transcript,
)
from ._types import (
    Message as Message,
)
from ._types import (
    ParseError as ParseError,
)
from ._types import (
    ToolCall as ToolCall,
)
from ._types import (
    ToolResult as ToolResult,
)
from ._world import (
    generate as generate,
)
from .tasks import (
    Task as Task,
)
from .tasks import (
    load_tasks as load_tasks,
)
from .tasks import (
    write_task_folder as write_task_folder,
)

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
