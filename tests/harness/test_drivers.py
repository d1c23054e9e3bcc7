"""One turn engine, three drivers: the same model turns give the same episode whichever
backend drives them.

The embedded trainer's batched sampler plays the shipped base model under harnesses of every
context policy and workflow (its turns are whatever it samples: tool calls, wrong syntax,
early answers). Those very turns are then replayed through the veRL agent loop (a server
that returns them as tokens) and through :func:`harness.run_episode`; the messages, the
reward and how each episode ended must agree.
"""

from __future__ import annotations

import asyncio
import string
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("verl")

import torch  # noqa: E402
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers  # noqa: E402
from transformers import PreTrainedTokenizerFast  # noqa: E402
from verl.workers.rollout.replica import TokenOutput  # noqa: E402

from hscale.harness import (  # noqa: E402
    EPISODE_TURNS,
    Episode,
    Generation,
    Message,
    Termination,
    generate,
    harness_named,
    run_episode,
)
from hscale.harness import tokenizer as word_tokenizer  # noqa: E402

# internal: tests the embedded sampler
from hscale.train.embedded._sampler import Sampler  # noqa: E402
from hscale.train.policy import base_model  # noqa: E402
from tests.harness.test_verl_agent_loop import (  # noqa: E402
    _MESSAGE,
    END,
    ROLES,
    TEMPLATE,
    config,
    make_loop,
    row_kwargs,
)

LABELS = ("S0-T0-O0-C0-W0", "S1-T1-O1-C1-W1", "S2-T2-O2-C2-W2", "S0-T1-O2-C2-W1",
          "S2-T0-O1-C1-W2", "oos/shell", "oos/actions")


@pytest.fixture(scope="module")
def tokenizer() -> PreTrainedTokenizerFast:
    """A character-level chat tokenizer: decode gives back exactly what was encoded, whatever
    the model wrote (role markers and the end of turn are special tokens)."""
    specials = [f"<|{r}|>" for r in ROLES] + [END]
    chars = dict.fromkeys(["<unk>", *string.printable, *specials])
    tok = Tokenizer(models.WordLevel({c: i for i, c in enumerate(chars)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    tok.decoder = decoders.Fuse()
    tok.add_special_tokens([*specials, "<pad>"])
    hf = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>",
                                 eos_token=END)
    hf.chat_template = TEMPLATE
    return hf


class Replay:
    """veRL's server-manager interface, answering each call with the next recorded turn."""

    def __init__(self, tok: Any, turns: list[str]) -> None:
        self.tok, self.turns = tok, list(turns)

    async def generate(self, request_id: str, *, prompt_ids: list[int],
                       sampling_params: dict[str, Any], **kwargs: Any) -> TokenOutput:
        ids = self.tok.encode(self.turns.pop(0), add_special_tokens=False)
        return TokenOutput(token_ids=ids + [self.tok.eos_token_id],
                           log_probs=[-0.5] * (len(ids) + 1))


class ReplayPolicy:
    def __init__(self, turns: list[str]) -> None:
        self.turns = list(turns)

    def generate(self, messages: list[Message]) -> Generation:
        return Generation(self.turns.pop(0))


@pytest.fixture(scope="module")
def sampled() -> list[tuple[str, Any, Episode]]:
    """Embedded episodes: the shipped base model, sampled, under every label on 4 tasks."""
    torch.manual_seed(0)
    sampler = Sampler(base_model("hscale-tiny"), word_tokenizer(), max_turns=EPISODE_TURNS)
    tasks = generate(5, seed=3)[:4]
    jobs = [(label, task) for label in LABELS for task in tasks for _ in range(2)]
    episodes = sampler.run([(harness_named(label), task) for label, task in jobs],
                           generator=torch.Generator().manual_seed(7))
    return [(label, task, ep) for (label, task), ep in zip(jobs, episodes, strict=True)]


def turns_of(episode: Episode) -> list[str]:
    return [g.text for g in episode.generations]


def test_the_sample_exercises_every_rule(sampled):
    """The comparison below means something: the base model's turns reach tool calls,
    parse errors, workflow injections, answers and the turn limit."""
    episodes = [ep for _, _, ep in sampled]
    assert any(ep.success for ep in episodes) and not all(ep.success for ep in episodes)
    assert any(ep.parse_errors for ep in episodes) and any(ep.tool_calls for ep in episodes)
    assert {ep.termination for ep in episodes} >= {Termination.ANSWER, Termination.MAX_TURNS}
    assert any(m.role == "user" for ep in episodes for m in ep.messages[2:])  # injections


def test_run_episode_replays_the_sampler_exactly(sampled):
    for label, task, ep in sampled:
        if ep.termination == Termination.LENGTH:
            continue
        again = run_episode(ReplayPolicy(turns_of(ep)), harness_named(label), task,
                            max_turns=EPISODE_TURNS)
        assert [(m.role, m.content) for m in again.messages] == \
            [(m.role, m.content) for m in ep.messages], (label, task.task_id)
        assert (again.reward, again.termination, again.turns, again.parse_errors) == \
            (ep.reward, ep.termination, ep.turns, ep.parse_errors)


async def replay_rollout(tok: Any, turns: list[str], kwargs: dict[str, Any]) -> Any:
    """One veRL rollout whose model calls return ``turns``; the whole history as one output."""
    loop = make_loop(tok, Replay(tok, turns), config(response_length=10**6),
                     segment_mode="full_history")
    return await loop.run({"temperature": 1.0, "logprobs": True}, **kwargs)


def test_the_verl_agent_loop_replays_the_sampler_exactly(sampled, tokenizer):
    compared = 0
    for label, task, ep in sampled:
        if ep.termination == Termination.LENGTH:
            continue
        kwargs = row_kwargs(task, label)
        kwargs["extra_info"] = {**kwargs["extra_info"], "max_turns": EPISODE_TURNS}
        out = asyncio.run(replay_rollout(tokenizer, turns_of(ep), kwargs))
        text = tokenizer.decode(out.prompt_ids + out.response_ids, skip_special_tokens=False)
        messages = [(role, content) for role, content in _MESSAGE.findall(text)]
        last = max(i for i, m in enumerate(ep.messages) if m.role == "assistant")
        assert messages == [(m.role, m.content) for m in ep.messages[: last + 1]], label
        extra = out.extra_fields
        assert out.reward_score == ep.reward, (label, task.task_id)
        assert extra["hscale_termination"] == ep.termination
        assert (extra["hscale_turns"], extra["hscale_parse_errors"]) == (ep.turns,
                                                                         ep.parse_errors)
        compared += 1
    assert compared >= 0.9 * len(sampled)


TRANSCRIPT_CHECK = """import json, os
turns = json.load(open(os.environ["TRANSCRIPT_FILE"]))
ran = [t["content"] for t in turns if t["role"] == "tool" and t["name"] == "run"]
print(1.0 if ran == ["exit 0\\n5"] and turns[-1]["content"] == "5" else 0.0)
"""


@pytest.mark.parametrize("label", ["S0-T0-O0-C0-W0", "S1-T1-O1-C1-W1", "S2-T2-O2-C2-W2",
                                   "oos/shell", "oos/actions"])
def test_a_real_format_task_with_the_shell_is_the_same_under_both_drivers(label, tokenizer,
                                                                          tmp_path):
    """A task whose benchmark gives ``run``: its prompt, the shell call, the transcript its
    checker reads and the reward are the same through run_episode and veRL's agent loop."""
    from hscale.harness import ToolCall

    # internal: tests against the canonical tool tables
    from hscale.harness._types import CANONICAL_TOOLS
    from hscale.harness.tasks import Task

    (tmp_path / "reward.py").write_text(TRANSCRIPT_CHECK)
    task = Task(task_id="shell-1", user_query="run add.py and give its output .",
                input_files={"add.py": "print(2 + 3)\n"}, tools=tuple(CANONICAL_TOOLS),
                limits={"max_turns": 6},
                checker={"kind": "script", "path": str(tmp_path / "reward.py")})
    harness = harness_named(label).fresh()
    harness.start(task.user_query, task.tools)
    turns = [harness.format_call(ToolCall("run", {"command": "python3 add.py"})), "5"]
    if label.endswith("W1") or label.endswith("W2"):  # plan-first / verify workflows
        turns = ["i will run add.py .", *turns, "5", "5"]
    local = run_episode(ReplayPolicy(turns), harness_named(label), task, max_turns=30)
    kwargs = row_kwargs(task, label)
    kwargs["extra_info"] = {**kwargs["extra_info"], "max_turns": 30}
    out = asyncio.run(replay_rollout(tokenizer, turns[:local.turns], kwargs))
    assert local.reward == out.reward_score == 1.0, (label, local.messages[-3:])
    assert out.extra_fields["hscale_turns"] == local.turns
    shell = harness.tool_interface.spec("run").name
    assert shell in local.messages[0].content


@pytest.mark.parametrize("label", ["S0-T0-O0-C0-W0-R1", "S1-T1-O1-C1-W1-R0",
                                   "S2-T2-O2-C2-W2-R1"])
def test_a_space_from_a_spec_is_the_same_under_both_drivers(label, tokenizer):
    """A harness of a described space (a plugin's sixth component, which rewrites every
    observation): veRL's rows carry the space, and the agent loop plays the oracle's turns
    into the same messages and reward as run_episode."""
    from pathlib import Path

    from hscale.harness import Oracle
    from hscale.harness import verl_agent_loop as vl
    from hscale.train.planning import space_of
    from hscale.train.spec import load_spec

    spec = Path(__file__).resolve().parents[2] / "experiments" / "sixth-factor.yaml"
    space = space_of(load_spec(spec))
    harness = harness_named(label, space)
    task = generate(3, seed=5)[1]
    local = run_episode(Oracle(task, harness), harness, task, max_turns=EPISODE_TURNS)
    assert local.success and any("task: " in m.content for m in local.messages
                                 if m.role == "tool") == label.endswith("R1")
    row = vl.to_verl_rows([task], [label], "train", space=space).iloc[0].to_dict()
    kwargs = {**row, "raw_prompt": row["prompt"], "index": row["extra_info"]["index"]}
    kwargs["extra_info"] = {**kwargs["extra_info"], "max_turns": EPISODE_TURNS}
    out = asyncio.run(replay_rollout(tokenizer, turns_of(local), kwargs))
    text = tokenizer.decode(out.prompt_ids + out.response_ids, skip_special_tokens=False)
    last = max(i for i, m in enumerate(local.messages) if m.role == "assistant")
    assert _MESSAGE.findall(text) == [(m.role, m.content) for m in local.messages[:last + 1]]
    assert out.reward_score == local.reward == 1.0
