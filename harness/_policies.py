"""Scripted policies: an oracle that follows the harness's own protocol, a noisy oracle with a
tunable error rate, one that does nothing, and a demonstrator with surface-form habits whose
episodes are the supervised warm start of the embedded trainer. They are the fakes that let
every harness, the runner and the trainer be tested offline.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from hscale.errors import HscaleError
from hscale.harness import components as registry
from hscale.harness._engine import Episode, Generation
from hscale.harness._harness import Harness
from hscale.harness._loop import run_episode
from hscale.harness._space import OUT_OF_SPACE, factor_space
from hscale.harness._types import Message, ToolCall
from hscale.harness.components import ToolInterface
from hscale.harness.tasks import Task

WORDS = (
    "plan: use the tools, then answer.",
    "i do not know.",
)

PLAN = "plan: use the tools, then answer."
_PLAN_REQUESTS = ("plan first", "first give a plan")
_CHECK_REQUESTS = ("check your work",)


def _asks(messages: list[Message], phrases: tuple[str, ...]) -> bool:
    last = messages[-1] if messages else None
    return bool(last and last.role == "user" and any(p in last.content for p in phrases))


@dataclass
class Oracle:
    """Solves its task by writing the task's solution in the harness's own call syntax.

    It keeps its place in the script itself, so it works under any context policy; it
    gives a plan when the workflow asks for one and repeats its answer when asked to check.
    """

    task: Task
    harness: Harness
    _step: int = field(default=0, init=False)
    _planned: bool = field(default=False, init=False)

    def generate(self, messages: list[Message]) -> Generation:
        if self._needs_plan(messages):
            self._planned = True
            return Generation(PLAN)
        if self._step < len(self.task.solution):
            call = self.task.solution[self._step]
            self._step += 1
            return Generation(self.harness.format_call(call))
        return Generation(self.task.final_answer or "")

    def _needs_plan(self, messages: list[Message]) -> bool:
        if self._planned:
            return False
        wants_plan = "plan" in messages[0].content if messages else False
        return wants_plan or _asks(messages, _PLAN_REQUESTS)


@dataclass
class NoisyOracle:
    """The oracle, but each turn goes wrong with probability ``error_rate``.

    Mistakes are the realistic kinds: a call in another interface's syntax, a wrong path,
    or an answer given too early. After a mistake the oracle retries the same step.
    """

    task: Task
    harness: Harness
    error_rate: float = 0.2
    seed: int = 0
    other: Harness | None = None  # whose call syntax a "wrong syntax" mistake uses
    _oracle: Oracle = field(init=False)
    _rng: np.random.Generator = field(init=False)

    def __post_init__(self) -> None:
        self._oracle = Oracle(self.task, self.harness)
        self._rng = np.random.default_rng(self.seed)

    def generate(self, messages: list[Message]) -> Generation:
        if self._rng.random() >= self.error_rate:
            return self._oracle.generate(messages)
        kind = self._rng.integers(3)
        script = self.task.solution
        step = min(self._oracle._step, max(len(script) - 1, 0))
        if kind == 0 and script and self.other is not None:
            return Generation(self.other.format_call(script[step]))
        if kind == 1 and script:
            call = script[step]
            if "path" in call.args:
                return Generation(self.harness.format_call(
                    ToolCall(call.name, {**call.args, "path": "nothing.txt"})))
        return Generation("i do not know.")


@dataclass
class DoNothing:
    """Answers at once without using a tool: a floor every harness must score 0 on."""

    def generate(self, messages: list[Message]) -> Generation:
        return Generation("i do not know.")


# --- the demonstrator: imperfect demonstrations for a supervised warm start ------------------
IDK = "i do not know."


@dataclass(frozen=True)
class WrongSyntax:
    """Writes a call in ``interface``'s syntax (a habit from the syntax seen most in training).

    The parser answers with an error observation; after it the demonstrator writes the same
    wrong syntax again (``repeat``), gives up with ``i do not know.`` (``give_up``), or
    writes the call correctly (the rest).
    """

    interface: str
    rate: float
    repeat: float
    give_up: float


@dataclass(frozen=True)
class Misread:
    """Copies the value of the observation's ``field`` (json) instead of its content, wherever
    it copies a result: the final answer, the text it writes, an early answer."""

    field: str
    rate: float


@dataclass(frozen=True)
class EarlyStop:
    """Answers before the last tool call (with what the last observation shows); when the
    workflow asks for a check it repeats that answer (``stubborn``) instead of finishing."""

    rate: float
    stubborn: float


@dataclass(frozen=True)
class Slips:
    """Extra ordinary slips per tool call (a wrong path, an early ``i do not know.``)."""

    rate: float


Habit = WrongSyntax | Misread | EarlyStop | Slips

# Per tool call, under every harness: half wrong paths (reads only, retried), half giving up.
SLIP_RATE = 0.03
# Share of out-of-space presets among the harnesses of :func:`demonstrations`.
OOS_SHARE = 0.05

# Habits by realization name. Each applies only where its realization is in the harness, and
# each rate is above 0.5, so a model imitating the demonstrations greedily follows the habit
# there and fails: RL has a surface-form mistake to unlearn, not only a policy to sharpen.
# Realizations not listed (the base harness's among them) are demonstrated almost perfectly.
# The out-of-space realizations get milder versions: demonstrated at a lower quality.
HABITS: dict[str, tuple[Habit, ...]] = {
    # json_call's syntax where xml_call's is asked for, then often again or giving up.
    "tool_interface/xml_call": (WrongSyntax("tool_interface/json_call", 0.75, 0.4, 0.35),),
    # the json observation's "status" value ("ok") taken for the result.
    "observation/json": (Misread("status", 0.7),),
    # a step short under act_verify, relying on the check, then not using it.
    "workflow/act_verify": (EarlyStop(0.8, 0.8),),
    # out of space: an in-space syntax sometimes, more slips under the unfamiliar prompts.
    "tool_interface/shell": (WrongSyntax("tool_interface/json_call", 0.35, 0.3, 0.3),),
    "tool_interface/action_lines": (WrongSyntax("tool_interface/json_call", 0.35, 0.3, 0.3),),
    "system_prompt/manual": (Slips(0.1),),
    "system_prompt/qa": (Slips(0.1),),
}


def _first(habits: Sequence[Habit], kind: type) -> object | None:
    return next((h for h in habits if isinstance(h, kind)), None)


@dataclass
class Demonstrator:
    """The oracle with the habits ``habits`` assigns to its harness's realizations, plus slips.

    Every mistake is a function of the realization and of what the model is shown, so a model
    trained on these episodes can learn it and RL can unlearn it. Rates of habits are
    multiplied by ``habit_scale`` (0 gives an oracle with slips). Deterministic given ``seed``.
    """

    task: Task
    harness: Harness
    seed: int = 0
    slip_rate: float = SLIP_RATE
    habit_scale: float = 1.0
    habits: Mapping[str, tuple[Habit, ...]] = field(default_factory=lambda: HABITS)
    _rng: np.random.Generator = field(init=False, repr=False)
    _syntax: WrongSyntax | None = field(init=False, repr=False)
    _foreign: ToolInterface | None = field(init=False, repr=False)
    _misread: Misread | None = field(init=False, repr=False)
    _early_stop: EarlyStop | None = field(init=False, repr=False)
    _slips: float = field(init=False, repr=False)  # slip chance per tool call
    _step: int = field(default=0, init=False)
    _planned: bool = field(default=False, init=False)
    _pending: bool = field(default=False, init=False)  # last turn was a wrong-syntax call
    _answer: str | None = field(default=None, init=False)
    _early: bool = field(default=False, init=False)  # answered before finishing the script
    _stop_decided: bool = field(default=False, init=False)
    _written: str | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self._rng = np.random.default_rng(self.seed)
        names = self.harness.realization_names()
        active = [h for name in names.values() for h in self.habits.get(name, ())]
        syntax = _first(active, WrongSyntax)
        own = names["tool_interface"]
        self._syntax = syntax if isinstance(syntax, WrongSyntax) and syntax.interface != own \
            else None
        self._foreign = registry.get(self._syntax.interface) if self._syntax else None
        misread = _first(active, Misread)
        self._misread = misread if isinstance(misread, Misread) else None
        early = _first(active, EarlyStop)
        self._early_stop = early if isinstance(early, EarlyStop) else None
        self._slips = min(1.0, self.slip_rate + self.habit_scale * sum(
            h.rate for h in active if isinstance(h, Slips)))

    def _chance(self, rate: float) -> bool:
        return bool(self._rng.random() < min(1.0, rate * self.habit_scale))

    # --- turns ----------------------------------------------------------------------------
    def generate(self, messages: list[Message]) -> Generation:
        if self._needs_plan(messages):
            self._planned = True
            return Generation(PLAN)
        if self._answer is not None and _asks(messages, _CHECK_REQUESTS):
            stubborn = self._early_stop.stubborn if self._early_stop else 0.0
            if not self._early or self._chance(stubborn):
                return Generation(self._answer)
            self._answer, self._early = None, False  # resume the script
        if self._pending:
            return self._after_syntax_error(messages)
        return self._act(messages)

    def _needs_plan(self, messages: list[Message]) -> bool:
        if self._planned:
            return False
        wants_plan = "plan" in messages[0].content if messages else False
        return wants_plan or _asks(messages, _PLAN_REQUESTS)

    def _act(self, messages: list[Message]) -> Generation:
        script = self.task.solution
        if self._step >= len(script):
            return self._final(messages)
        call = script[self._step]
        if self._early_stop and self._step == len(script) - 1 and not self._stop_decided:
            self._stop_decided = True
            if self._chance(self._early_stop.rate):
                return self._say(self._copy(messages, self._seen(messages)), early=True)
        if self._rng.random() < self._slips:
            decoys = sorted(set(self.task.input_files) - {call.args.get("path", "")})
            if call.name == "read" and decoys and self._rng.random() < 0.5:
                path = decoys[int(self._rng.integers(len(decoys)))]
                return Generation(self.harness.format_call(ToolCall("read", {"path": path})))
            return self._say(IDK, early=True)
        if self._syntax and self._foreign and self._chance(self._syntax.rate):
            self._pending = True
            return Generation(self._foreign.format_call(call))
        return self._call(messages)

    def _after_syntax_error(self, messages: list[Message]) -> Generation:
        assert self._syntax is not None and self._foreign is not None
        draw = self._rng.random()
        if draw < self._syntax.repeat:
            return Generation(self._foreign.format_call(self.task.solution[self._step]))
        self._pending = False
        if draw < self._syntax.repeat + self._syntax.give_up:
            return self._say(IDK, early=True)
        return self._call(messages)

    def _call(self, messages: list[Message]) -> Generation:
        """The script's next call in the harness's syntax; a written text is a copied result."""
        call = self.task.solution[self._step]
        self._step += 1
        if call.name == "write":
            self._written = self._copy(messages, call.args["text"])
            call = ToolCall("write", {**call.args, "text": self._written})
        return Generation(self.harness.format_call(call))

    def _final(self, messages: list[Message]) -> Generation:
        if self._written is not None:
            return self._say(self._written, early=False)
        return self._say(self._copy(messages, self.task.final_answer or ""), early=False)

    def _say(self, answer: str, early: bool) -> Generation:
        self._answer, self._early = answer, early
        return Generation(answer)

    # --- reading observations -------------------------------------------------------------
    def _copy(self, messages: list[Message], value: str) -> str:
        """``value``, or under a :class:`Misread` habit the wrong field of the last result."""
        if self._misread is None or not self._chance(self._misread.rate):
            return value
        wrong = _json_field(_last_tool(messages), self._misread.field)
        return wrong if wrong else value

    def _seen(self, messages: list[Message]) -> str:
        """A hasty reading of the last result: its last word (``i do not know.`` if none)."""
        text = _last_tool(messages)
        if text is None:
            return IDK
        try:
            result = self.harness.observation.parse(text)
        except HscaleError:
            return IDK
        words = result.output.split() if result.ok else []
        return words[-1] if words else IDK


def _last_tool(messages: Sequence[Message]) -> str | None:
    return next((m.content for m in reversed(messages) if m.role == "tool"), None)


def _json_field(text: str | None, name: str) -> str | None:
    """The text value of field ``name`` of a json observation, if ``text`` is one."""
    try:
        obj = json.loads(text) if text else None
    except ValueError:
        return None
    value = obj.get(name) if isinstance(obj, dict) else None
    return value if isinstance(value, str) and value else None


def demonstrations(n_episodes: int, seed: int, harnesses: Sequence[str] | None = None,
                   tasks: Sequence[Task] | None = None, *, oos_share: float = OOS_SHARE,
                   slip_rate: float = SLIP_RATE, habit_scale: float = 1.0) -> list[Episode]:
    """Demonstrator episodes over train-split tasks and uniformly drawn harnesses.

    Harness labels are drawn uniformly from ``harnesses``, by default from all 243 in-space
    configurations, with the out-of-space presets at ``oos_share``. Episode ``i`` runs on
    ``tasks[i % len(tasks)]`` (default: ``n_episodes`` new train tasks of ``seed``).
    Deterministic given the arguments.
    """
    if n_episodes < 0:
        raise HscaleError(f"need n_episodes >= 0, got {n_episodes}")
    if tasks is None:
        from hscale.harness._task_sources import BuiltinWorld
        tasks = BuiltinWorld().tasks(n_episodes, seed, split="train")
    if n_episodes and not tasks:
        raise HscaleError("no tasks to demonstrate", "pass train-split tasks or tasks=None")
    held_out = sorted({t.task_id for t in tasks if t.split != "train"})
    if held_out:
        raise HscaleError(f"demonstrations on held-out tasks {held_out[:3]}",
                          "use tasks of the train split only")
    if harnesses is not None and not harnesses:
        raise HscaleError("no harnesses to demonstrate under", "pass labels or harnesses=None")
    space = factor_space()
    rng = np.random.default_rng([int(seed), 0x64656D6F])
    built: dict[str, Harness] = {}
    episodes = []
    for i in range(n_episodes):
        if harnesses is not None:
            label = harnesses[int(rng.integers(len(harnesses)))]
        elif rng.random() < oos_share:
            label = OUT_OF_SPACE[int(rng.integers(len(OUT_OF_SPACE)))]
        else:
            label = space.label(space.from_index(int(rng.integers(space.size))))
        if label not in built:
            built[label] = Harness.from_name(label)
        harness = built[label]
        task = tasks[i % len(tasks)]
        policy = Demonstrator(task, harness, seed=int(rng.integers(2**63)), slip_rate=slip_rate,
                              habit_scale=habit_scale)
        episodes.append(run_episode(policy, harness, task))
    return episodes
