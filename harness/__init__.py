"""What a harness is: components, the task world, the sandboxed environment, the turn engine
and its drivers (run_episode here; the embedded sampler and the veRL agent loop elsewhere).

Heavy dependencies (torch, veRL) are imported only by the modules that use them.
"""

from hscale.harness.benchmarks import BENCHMARKS
from hscale.harness.engine import Episode, Generation, Termination, TurnEngine
from hscale.harness.env import Env
from hscale.harness.harness import Harness
from hscale.harness.http_policy import OpenAIChatPolicy
from hscale.harness.loop import Policy, run_episode
from hscale.harness.out_of_space import OUT_OF_SPACE
from hscale.harness.policies import DoNothing, NoisyOracle, Oracle
from hscale.harness.tasks import Task, load_tasks, write_task_folder
from hscale.harness.types import Message, ToolCall, ToolResult

__all__ = [
    "BENCHMARKS", "OUT_OF_SPACE", "DoNothing", "Env", "Episode", "Generation", "Harness",
    "Message", "NoisyOracle", "OpenAIChatPolicy", "Oracle", "Policy", "Task", "Termination",
    "ToolCall", "ToolResult", "TurnEngine", "load_tasks", "run_episode", "write_task_folder",
]
