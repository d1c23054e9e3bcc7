"""Directional harness evolution (Harness-S): a frozen sibling pool grown from a base harness.

Each round: every member of the pool so far (the base harness first) is evaluated, greedily,
on a training split (its failures) and a validation split (what it solves). Parents are
taken in the order that maximises the joint coverage of the validation tasks (greedy set
cover: the member that solves most, then the one that adds most, ...). A parent's failures
are grouped by root cause (:func:`root_cause`); a direction is 2-3 root causes, each backed
by at least two failing tasks. The editor receives the parent and the direction and returns
a child (:mod:`hscale.harness._edits`); a reply that does not parse, a child that does not
build, breaks the protocol, does not run or repeats a member is dropped and counted with its
reason. Every child that passes joins; after the last round the pool is frozen
(:mod:`hscale.train.harness_s`). The paper's AppWorld pool: 3 rounds of 7/8/8 proposals, 20 kept.

An evolution's :meth:`Evolution.state` after the base harness's evaluation and after each
round is all it needs to go on (:meth:`Evolution.resume`): an interrupted one is resumed
after its last finished round, and ends with the pool an uninterrupted one gives.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import pandas as pd

from hscale.harness import (
    Edit,
    EditError,
    Episode,
    Harness,
    apply,
    build,
    canonical,
    child_name,
    components_of,
    problem,
)
from hscale.harness.tasks import Task
from hscale.train.harness_s._pool import Child, Pool

SUPPORT = 2  # failing tasks a root cause needs to back a direction
PER_DIRECTION = 3  # root causes a direction takes at most
EXAMPLES = 2  # failing episodes the editor is shown per root cause


def root_cause(episode: Episode) -> str | None:
    """A failed episode's root cause in a few words (None for a success): the first tool
    error's message (file names and numbers dropped), else how it ended."""
    if episode.success:
        return None
    if episode.checker_failed:
        return "the checker failed"
    if episode.termination == "policy_error":
        return "the policy failed"
    failed = next((r for _, r in episode.tool_calls if not r.ok), None)
    if episode.parse_errors:
        return "wrong call syntax"
    if failed is not None:
        words = [w for w in failed.error.lower().split(":")[0].split()
                 if re.fullmatch(r"[a-z]+[,;]?", w)]  # file names, paths, numbers dropped
        return "tool error: " + " ".join(w.rstrip(",;") for w in words[:4]) if words \
            else "tool error"
    if episode.termination == "max_turns":
        return "ran out of turns"
    if episode.termination == "length":
        return "ran out of tokens"
    if not episode.tool_calls:
        return "answered without a tool call"
    return "wrong final answer"


@dataclass(frozen=True)
class Direction:
    """Root causes to fix together, each with the failing tasks that back it."""

    causes: tuple[str, ...]
    tasks: tuple[tuple[str, ...], ...]


def directions(failures: Mapping[str, str | None], per: int = PER_DIRECTION,
               support: int = SUPPORT) -> list[Direction]:
    """task -> root cause (None: solved) -> directions: the causes backed by ``support``
    tasks or more, most frequent first, ``per`` a direction."""
    by_cause: dict[str, list[str]] = {}
    for task, cause in failures.items():
        if cause is not None:
            by_cause.setdefault(cause, []).append(task)
    backed = sorted((c for c, ts in by_cause.items() if len(ts) >= support),
                    key=lambda c: (-len(by_cause[c]), c))
    return [Direction(tuple(chunk), tuple(tuple(by_cause[c]) for c in chunk))
            for chunk in (backed[i:i + per] for i in range(0, len(backed), per))]


def cover_order(solved: Mapping[str, set[str]]) -> list[str]:
    """Members in greedy max-coverage order (ties: the earlier member)."""
    left, covered, order = dict(solved), set(), []
    while left:
        best = max(left, key=lambda m: len(left[m] - covered))
        order.append(best)
        covered |= left.pop(best)
    return order


class Editor(Protocol):
    """Writes a child of ``parent`` for ``direction``: the reply text (a JSON edit)."""

    def propose(self, request: str) -> str: ...

    def skip(self, requests: int) -> None:
        """A resumed evolution's editor: the first ``requests`` were answered before."""


@dataclass
class ScriptedEditor:
    """Replies in order (objects are sent as JSON); past the last, an empty reply."""

    replies: list[Any]
    asked: list[str] = field(default_factory=list)
    skipped: int = 0  # replies a resumed evolution's earlier requests took

    def propose(self, request: str) -> str:
        self.asked.append(request)
        index = self.skipped + len(self.asked) - 1
        if index >= len(self.replies):
            return ""
        reply = self.replies[index]
        return reply if isinstance(reply, str) else json.dumps(reply)

    def skip(self, requests: int) -> None:
        self.skipped = requests


@dataclass
class ModelEditor:
    """An editor that is a chat model (an endpoint: the judge client's kind)."""

    model: Any
    max_new_tokens: int = 1024

    def propose(self, request: str) -> str:
        from hscale.harness import Message

        reply = self.model.generate([[Message("system", EDITOR_SYSTEM),
                                      Message("user", request)]], True, self.max_new_tokens)
        return reply[0].text

    def skip(self, requests: int) -> None:
        """Nothing to skip: a greedy model's reply depends on the request alone."""


EDITOR_SYSTEM = (
    "You improve an AI agent's harness: the system prompt, tool interface, observation "
    "format, context policy, workflow and notes around a fixed model. Reply with one JSON "
    'object only: {"set": {"<component>": {"name": "<realization>", "params": {...}}}, '
    '"why": "<one sentence>"}.')


def request_text(parent: str, components: Mapping[str, Any], system: str,
                 direction: Direction, examples: Mapping[str, Sequence[str]],
                 available: Mapping[str, Sequence[str]]) -> str:
    """What the editor is shown: the parent, its system prompt, the root causes with the
    failing tasks behind them and an excerpt of each, and the realizations it may use."""
    causes = []
    for cause, tasks in zip(direction.causes, direction.tasks, strict=True):
        shown = "\n".join(f"  - {t}: {examples.get(t, [''])[0][:300]}" for t in tasks[:EXAMPLES])
        causes.append(f"- {cause} ({len(tasks)} failing tasks)\n{shown}")
    realizations = "\n".join(f"- {c}: {', '.join(names)}" for c, names in available.items())
    return (f"## Parent harness {parent}\n{canonical(components)}\n\n## Its system prompt\n"
            f"{system}\n\n## Root causes to fix\n" + "\n".join(causes)
            + f"\n\n## Realizations\n{realizations}\n(system_prompt/text takes params text, "
            "with {tools} and optionally {workflow} {observation} {context} {extra}; "
            "notes/text takes text, tool_notes and hide)\n\nPropose one edit.")


def parse_reply(reply: str) -> Edit:
    """The edit in an editor's reply: a ```json block, else the first JSON object."""
    text = reply or ""
    fenced = re.search(r"```(?:json)?\s*(\{.*?\})\s*```", text, re.S)
    candidates = [fenced.group(1)] if fenced else []
    decoder = json.JSONDecoder()
    for start in (m.start() for m in re.finditer(r"\{", text)):
        try:
            candidates.append(json.dumps(decoder.raw_decode(text[start:])[0]))
            break
        except ValueError:
            continue
    for candidate in candidates:
        try:
            return Edit.parse(json.loads(candidate))
        except ValueError:
            continue
    if not candidates:
        raise EditError("does not parse", "the reply holds no JSON object")
    return Edit.parse(json.loads(candidates[0]))


Play = Callable[[list[tuple[Harness, Task]]], list[Episode]]


@dataclass
class Evolution:
    """One evolution's inputs: ``play`` runs (harness, task) jobs greedily (the policy)."""

    play: Play
    base: Harness
    space: str
    train: list[Task]
    validation: list[Task]
    editor: Editor
    rounds: Sequence[int]  # proposals per round, e.g. (7, 8, 8)
    # (round, children accepted, the dropped proposals' records) after each round
    on_round: Callable[[int, int, list[dict[str, Any]]], None] | None = None
    on_proposal: Callable[[int, int, int], None] | None = None  # (round, done, proposals)
    # (round: 0 the base harness, harnesses, episodes) before each evaluation
    on_evaluate: Callable[[int, int, int], None] | None = None
    # the state after the base harness's evaluation and after each round (see resume)
    on_save: Callable[[dict[str, Any]], None] | None = None
    members: dict[str, dict[str, Any]] = field(default_factory=dict)
    results: list[dict[str, Any]] = field(default_factory=list)
    children: list[Child] = field(default_factory=list)
    tallies: list[dict[str, Any]] = field(default_factory=list)  # one a finished round
    requests: int = 0  # the editor's requests so far

    def run(self) -> Pool:
        """Evolve from where the state stands: the base harness's evaluation unless done,
        then each round not finished yet."""
        base = self.base.name
        if not self.members:
            self.members[base] = components_of(self.base)
            self._evaluate([base], 0)
            self._save()
        for r in range(len(self.tallies) + 1, len(self.rounds) + 1):
            proposals = self.rounds[r - 1]
            accepted, dropped = self._round(r, proposals)
            self.children += accepted
            self._evaluate([c.name for c in accepted], r)
            self.tallies.append({"round": r, "proposals": proposals,
                                 "accepted": len(accepted), "dropped": dropped})
            self._save()
            if self.on_round is not None:
                self.on_round(r, len(accepted), dropped)
        return Pool(self.space, base, tuple(self.children), tuple(self.tallies),
                    {"train_tasks": [t.task_id for t in self.train],
                     "validation_tasks": [t.task_id for t in self.validation]})

    def state(self) -> dict[str, Any]:
        """What going on needs, as JSON: the members, their evaluation rows, the children,
        each finished round's tally and how many requests the editor has answered."""
        return json.loads(json.dumps({
            "members": self.members, "results": self.results,
            "children": [c.record() for c in self.children], "rounds": self.tallies,
            "requests": self.requests}))

    def resume(self, state: Mapping[str, Any]) -> int:
        """Go on from a saved :meth:`state` (the same inputs'): its rounds are not repeated
        and the editor skips the requests it answered. Returns the rounds it finished."""
        self.members = dict(state["members"])
        self.results = list(state["results"])
        self.children = [Child(c["name"], c["parent"], int(c["round"]), tuple(c["causes"]),
                               dict(c["edit"]), dict(c["components"]))
                         for c in state["children"]]
        self.tallies = list(state["rounds"])
        self.requests = int(state["requests"])
        self.editor.skip(self.requests)
        return len(self.tallies)

    def _save(self) -> None:
        if self.on_save is not None:
            self.on_save(self.state())

    def evaluations(self) -> pd.DataFrame:
        """Every member's greedy episodes: harness, round, split, task_id, success, cause."""
        return pd.DataFrame(self.results)

    def _evaluate(self, names: list[str], round_: int) -> None:
        jobs = [(name, split, task) for name in names
                for split, tasks in (("train", self.train), ("validation", self.validation))
                for task in tasks]
        if names and self.on_evaluate is not None:
            self.on_evaluate(round_, len(names), len(jobs))
        episodes = self.play([(self._harness(n), t) for n, _, t in jobs])
        for (name, split, task), ep in zip(jobs, episodes, strict=True):
            self.results.append({"harness": name, "round": round_, "split": split,
                                 "task_id": task.task_id, "success": float(ep.success),
                                 "cause": root_cause(ep) or "", "excerpt": _excerpt(ep)})

    def _harness(self, name: str) -> Harness:
        return self.base if name == self.base.name else build(self.members[name], name)

    def _round(self, r: int, proposals: int) -> tuple[list[Child], list[dict[str, Any]]]:
        frame = self.evaluations()
        val = frame[frame.split == "validation"]
        solved = {m: set(val.task_id[(val.harness == m) & (val.success >= 1)])
                  for m in self.members}
        plans = [(p, d) for p in cover_order(solved) for d in self._directions(frame, p)]
        accepted, dropped = [], []
        for i in range(proposals):
            if self.on_proposal is not None:
                self.on_proposal(r, i, proposals)
            if not plans:
                dropped.append({"reason": "no root cause", "detail": "no member has a root "
                                "cause backed by two failing training tasks"})
                continue
            parent, direction = plans[i % len(plans)]
            try:
                child = self._child(r, parent, direction, frame)
            except EditError as exc:
                dropped.append({"parent": parent, "causes": list(direction.causes),
                                "reason": exc.reason, "detail": exc.message})
                continue
            accepted.append(child)
            self.members[child.name] = child.components
        return accepted, dropped

    def _directions(self, frame: pd.DataFrame, parent: str) -> list[Direction]:
        mine = frame[(frame.harness == parent) & (frame.split == "train")]
        return directions({t: (c or None) for t, c in zip(mine.task_id, mine.cause,
                                                          strict=True)})

    def _child(self, r: int, parent: str, direction: Direction, frame: pd.DataFrame) -> Child:
        from hscale.harness.components import available

        mine = frame[(frame.harness == parent) & (frame.split == "train")]
        examples = {t: [e] for t, e in zip(mine.task_id, mine.excerpt, strict=True)}
        kinds = [*self.members[parent], "notes"]
        request = request_text(parent, self.members[parent],
                               self._harness(parent).render_system(), direction, examples,
                               {k: available(k) for k in dict.fromkeys(kinds)})
        self.requests += 1
        reply = self.editor.propose(request)
        try:
            edit = parse_reply(reply)
        except EditError as exc:  # what the editor said, so a user sees why
            raise EditError(exc.reason, f"{exc.message} (the reply began "
                            f"{' '.join(reply.split())[:80]!r})") from None
        components = apply(self.members[parent], edit)
        name = child_name(components)
        if name in self.members:
            raise EditError("repeats a member", f"the edit gives {name}, already in the pool")
        harness = build(components, name)
        broken = problem(harness)
        if broken:
            raise EditError("breaks the protocol", broken)
        self._runs(harness)
        return Child(name, parent, r, direction.causes, edit.record(), components)

    def _runs(self, harness: Harness) -> None:
        """One scripted episode through the turn engine: a child whose hooks raise is
        dropped as 'does not run'."""
        from hscale.harness import Oracle, run_episode

        task = self.train[0]
        try:
            run_episode(Oracle(task, harness.fresh()), harness.fresh(), task, score=False)
        except Exception as exc:  # a plugin's or a parameter's failure inside the episode
            raise EditError("does not run", f"{type(exc).__name__}: {exc}") from None


def _excerpt(episode: Episode) -> str:
    """A failed episode's last words: its first tool error, else its final answer."""
    failed = next((r.error for _, r in episode.tool_calls if not r.ok), "")
    return (failed or episode.final_answer or episode.termination)[:300]
