"""What a harness is: components, the task world, the sandboxed environment, the agent loop.

Heavy dependencies (torch, veRL) are imported only by the modules that use them.
"""

from harness.engine import Episode, Generation, TurnEngine
from harness.harness import Harness
from harness.http_policy import OpenAIChatPolicy
from harness.loop import Policy, run_episode
from harness.out_of_space import OUT_OF_SPACE
from harness.policies import DoNothing, NoisyOracle, Oracle
from harness.tasks import Task, load_tasks, write_task_folder
from harness.types import Message, ToolCall, ToolResult

__all__ = [
    "OUT_OF_SPACE", "DoNothing", "Episode", "Generation", "Harness", "Message", "NoisyOracle",
    "OpenAIChatPolicy", "Oracle", "Policy", "Task", "ToolCall", "ToolResult", "TurnEngine",
    "load_tasks", "run_episode", "write_task_folder",
]
