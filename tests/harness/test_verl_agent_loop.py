"""The veRL agent loop on CPU: a fake server manager driven by the scripted policies, a
word-level tokenizer built here (no download), and veRL's own classes around them.

Every episode is checked against :func:`harness.run_episode` with the same policy: the
views the fake server decodes from its prompt ids must be the reference episode's views, and
each returned sequence must be the chat template over the reference segment's messages with
mask 1 on exactly the model's tokens.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import threading
from dataclasses import dataclass, field, replace
from typing import Any

import pytest

pytest.importorskip("verl")

import hydra  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers  # noqa: E402
from transformers import PreTrainedTokenizerFast  # noqa: E402
from verl.experimental.agent_loop.agent_loop import (  # noqa: E402
    AgentLoopBase,
    AgentLoopOutput,
    AgentLoopWorker,
    DictConfigWrap,
    ToolListWrap,
    _agent_loop_registry,
)
from verl.utils.dataset.rl_dataset import RLHFDataset  # noqa: E402
from verl.workers.rollout.replica import TokenOutput  # noqa: E402

import hscale.harness.verl_agent_loop as vl  # noqa: E402
from hscale.contracts import Outcome, reward_extras
from hscale.errors import HscaleError  # noqa: E402
from hscale.harness import (  # noqa: E402
    PRESETS,
    DoNothing,
    Generation,
    Harness,
    Message,
    Oracle,
    generate,
    run_episode,
)

# internal: uses the built-in world's vocabulary
from hscale.harness._vocab import vocabulary  # noqa: E402
from hscale.harness.components import Action, Workflow, register, unregister  # noqa: E402

# internal: concrete workflows (registered by name)
from hscale.harness.components._workflow import continue_  # noqa: E402
from hscale.harness.tasks import Task  # noqa: E402

FULL = "S0-T0-O0-C0-W0"          # full context, react
WINDOW_PLAN = "S1-T1-O1-C1-W1"   # window context, plan_act
COMPACT_VERIFY = "S2-T2-O2-C2-W2"  # compact context, act_verify
LABELS = (FULL, WINDOW_PLAN, COMPACT_VERIFY)

ROLES = ("system", "user", "assistant", "tool")
END = "<|end|>"
TEMPLATE = ("{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}<|end|>{% endfor %}"
            "{% if add_generation_prompt %}<|assistant|>{% endif %}")
_MESSAGE = re.compile(r"<\|(system|user|assistant|tool)\|>(.*?)<\|end\|>", re.S)


# ------------------------------------------------------------------------------- fixtures


def chat_tokenizer() -> PreTrainedTokenizerFast:
    """Word-level over the built-in world's vocabulary, with spaces and newlines as tokens so
    ``decode(encode(text)) == text``; role markers and the end of turn are special tokens."""
    specials = [f"<|{r}|>" for r in ROLES] + [END]
    words = dict.fromkeys([*vocabulary(), " ", "\n", "\t", *specials])
    model = models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>")
    tok = Tokenizer(model)
    tok.pre_tokenizer = pre_tokenizers.Split(
        Regex(r"\\n|[A-Za-z0-9_]+|[^A-Za-z0-9_]"), behavior="isolated")
    tok.decoder = decoders.Fuse()
    tok.add_special_tokens([*specials, "<pad>", "<unk>"])
    hf = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>",
                                 eos_token=END)
    hf.chat_template = TEMPLATE
    return hf


def two_tasks() -> dict[str, Task]:
    """A 3-read task graded on the final answer and a 4-call task graded on out.txt."""
    pool = generate(20, 0)
    pick = {"answer": next(t for t in pool if t.category == "state_tracking"
                           and len(t.solution) == 3),
            "file": next(t for t in pool if t.category == "multi_step")}
    return pick


@pytest.fixture(scope="module")
def tokenizer() -> PreTrainedTokenizerFast:
    return chat_tokenizer()


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return two_tasks()


def logprob_of(token: int) -> float:
    """The fake server's log-prob of a token: distinct per id, so misalignment shows."""
    return -((token % 97) + 1) / 100


class FakeServer:
    """veRL's server-manager interface; decodes the prompt back into messages, asks a scripted
    policy for the next turn and returns its token ids (cut to ``max_tokens``)."""

    def __init__(self, tokenizer: PreTrainedTokenizerFast, policy: Any,
                 logprobs: bool = True) -> None:
        self.tokenizer, self.policy, self.logprobs = tokenizer, policy, logprobs
        self.views: list[list[Message]] = []
        self.max_tokens: list[int] = []
        self.temperatures: list[float | None] = []
        self.request_ids: set[str] = set()
        self.prompt_tokens = self.completion_tokens = 0  # what an episode's cost counts

    async def generate(self, request_id: str, *, prompt_ids: list[int],
                       sampling_params: dict[str, Any], **kwargs: Any) -> TokenOutput:
        text = self.tokenizer.decode(prompt_ids, skip_special_tokens=False)
        assert text.endswith("<|assistant|>"), "the prompt must end with the generation prompt"
        messages = [Message(role, content) for role, content in _MESSAGE.findall(text)]
        self.views.append(messages)
        self.request_ids.add(request_id)
        self.max_tokens.append(sampling_params["max_tokens"])
        self.temperatures.append(sampling_params.get("temperature"))
        reply = self.policy.generate(messages).text
        ids = self.tokenizer.encode(reply, add_special_tokens=False)
        ids = (ids + [self.tokenizer.eos_token_id])[: sampling_params["max_tokens"]]
        self.prompt_tokens += len(prompt_ids)
        self.completion_tokens += len(ids)
        return TokenOutput(token_ids=ids,
                           log_probs=[logprob_of(t) for t in ids] if self.logprobs else None)


class Recorder:
    """Wraps a policy and keeps the views it was shown (the reference run)."""

    def __init__(self, policy: Any) -> None:
        self.policy, self.views = policy, []

    def generate(self, messages: list[Message]) -> Generation:
        self.views.append(list(messages))
        return self.policy.generate(messages)


def config(response_length: int = 4096, transfer_queue: bool = False) -> Any:
    return OmegaConf.create({
        "actor_rollout_ref": {
            "rollout": {"prompt_length": 4096, "response_length": response_length,
                        "multi_turn": {"max_assistant_turns": None}},
            "model": {"path": "dummy-model"},
        },
        "data": {"apply_chat_template_kwargs": {}},
        "transfer_queue": {"enable": transfer_queue},
    })


def make_loop(tokenizer: Any, server: FakeServer, cfg: Any, **extra: Any) -> Any:
    """Build the loop the way veRL's AgentLoopWorker._run_agent_loop does (hydra target)."""
    entry = {**vl.AGENT_LOOP_CONFIG[0], **extra}
    return hydra.utils.instantiate(
        config=entry, trainer_config=DictConfigWrap(config=cfg), server_manager=server,
        tokenizer=tokenizer, processor=None, hf_model_type=None, dataset_cls=RLHFDataset,
        data_config=DictConfigWrap(cfg.data), tools=ToolListWrap([]))


def row_kwargs(task: Task, label: str) -> dict[str, Any]:
    row = vl.to_verl_rows([task], [label], "train").iloc[0].to_dict()
    return {**row, "raw_prompt": row["prompt"], "index": row["extra_info"]["index"]}


def rollout(tokenizer: Any, server: FakeServer, kwargs: dict[str, Any], cfg: Any = None,
            sampling: dict[str, Any] | None = None, **extra: Any) -> Any:
    async def go() -> Any:
        loop = make_loop(tokenizer, server, cfg if cfg is not None else config(), **extra)
        return await loop.run(sampling or {"temperature": 1.0, "logprobs": True}, **kwargs)
    return asyncio.run(go())


def reference(task: Task, label: str, policy: Any) -> tuple[Any, Recorder]:
    """run_episode with a recording policy; segments closed at the end of the history
    (Episode.segments keeps the last one ending at the last view, as Context.segments does)."""
    recorder = Recorder(policy)
    episode = run_episode(recorder, Harness.from_name(label), task)
    segments = list(episode.segments)
    segments[-1] = replace(segments[-1], end=len(episode.messages))
    episode.segments = segments
    return episode, recorder


def as_list(result: Any) -> list[AgentLoopOutput]:
    return result if isinstance(result, list) else [result]


def model_runs(out: AgentLoopOutput) -> list[list[int]]:
    """The maximal runs of response tokens with mask 1."""
    runs: list[list[int]] = []
    prev = 0
    for token, bit in zip(out.response_ids, out.response_mask, strict=True):
        if bit and not prev:
            runs.append([])
        if bit:
            runs[-1].append(token)
        prev = bit
    return runs


def check_sequence(tokenizer: Any, out: AgentLoopOutput, messages: list[Message],
                   trained: list[str]) -> None:
    """``out`` is the chat template over ``messages``; mask 1 exactly on ``trained`` turns."""
    rendered = tokenizer.apply_chat_template(
        [{"role": m.role, "content": m.content} for m in messages], tokenize=False)
    ids = out.prompt_ids + out.response_ids
    assert tokenizer.decode(ids, skip_special_tokens=False) == rendered
    runs = model_runs(out)
    eos = tokenizer.eos_token_id
    assert [tokenizer.decode(r, skip_special_tokens=True) for r in runs] == trained
    for run, text in zip(runs, trained, strict=True):  # the ids as generated, end token included
        assert run == tokenizer.encode(text, add_special_tokens=False) + [eos]
    assert sum(out.response_mask) == sum(len(r) for r in runs)
    assert len(out.response_logprobs) == len(out.response_ids)
    for token, bit, lp in zip(out.response_ids, out.response_mask, out.response_logprobs,
                              strict=True):
        assert lp == (logprob_of(token) if bit else 0.0)


def expected_num_turns(history: list[Message]) -> int:
    last = max(i for i, m in enumerate(history) if m.role == "assistant")
    return sum(m.role != "system" for m in history[: last + 1])


# ------------------------------------------------------------------------------- tests


def test_import_is_lazy_and_class_is_registered() -> None:
    code = ("import sys, hscale.harness, hscale.harness.verl_agent_loop as m; "
            "assert 'verl' not in sys.modules, 'verl imported eagerly'; "
            "m.to_verl_rows([], ['S0-T0-O0-C0-W0'], 'train'); "
            "assert 'verl' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)
    cls = vl.HscaleAgentLoop
    assert issubclass(cls, AgentLoopBase)
    assert _agent_loop_registry[vl.AGENT_NAME]["_target_"] == vl.CLASS_PATH
    assert hydra.utils.get_class(vl.CLASS_PATH) is cls


@pytest.mark.parametrize("label", LABELS)
def test_oracle_segments_match_run_episode(tokenizer, tasks, label) -> None:
    task = tasks["answer"]
    episode, recorder = reference(task, label, Oracle(task, Harness.from_name(label)))
    assert episode.reward == 1.0
    server = FakeServer(tokenizer, Oracle(task, Harness.from_name(label)))
    outputs = as_list(rollout(tokenizer, server, row_kwargs(task, label),
                              segment_mode="segments"))
    # the model saw exactly the reference views, in the same order, in one sticky session
    assert server.views == recorder.views
    assert len(server.request_ids) == 1
    history = episode.messages
    if label != FULL:
        assert len(episode.segments) > 1, "the task must make window/compact segment"
    assert len(outputs) == len(episode.segments)
    for i, (out, seg) in enumerate(zip(outputs, episode.segments, strict=True)):
        trained = [m.content for m, t in zip(seg.messages(history), seg.trainable(history),
                                             strict=True) if t]
        check_sequence(tokenizer, out, seg.messages(history), trained)
        assert out.reward_score == 1.0
        assert out.num_turns == expected_num_turns(history)
        assert out.extra_fields["hscale_segment"] == i
        assert out.extra_fields["hscale_termination"] == "answer"
        # the behaviour counts are the reference episode's: the drivers count alike; the
        # cost is what the server was asked and answered
        assert out.extra_fields["reward_extra_info"] == reward_extras(Outcome(
            1.0, True, episode.turns, behaviour=vl.wire_behaviour(episode, label),
            cost={"model_calls": episode.turns, "prompt_tokens": server.prompt_tokens,
                  "completion_tokens": server.completion_tokens}))
        assert out.extra_fields["reward_extra_info"]["tool_calls"] == len(episode.tool_calls)
    # every model turn is trained exactly once over the segments
    trained_all = [t for out in outputs for t in
                   (tokenizer.decode(r, skip_special_tokens=True) for r in model_runs(out))]
    assert trained_all == [g.text for g in episode.generations]
    assert outputs[-1].extra_fields["hscale_turns"] == episode.turns


@pytest.mark.parametrize("label", LABELS)
def test_single_output_modes(tokenizer, tasks, label) -> None:
    task = tasks["file"]
    episode, _ = reference(task, label, Oracle(task, Harness.from_name(label)))
    history = episode.messages
    # last_segment: the segment holding the final turn, exact tokens
    server = FakeServer(tokenizer, Oracle(task, Harness.from_name(label)))
    out = rollout(tokenizer, server, row_kwargs(task, label), segment_mode="last_segment")
    assert isinstance(out, AgentLoopOutput)
    seg = episode.segments[-1]
    trained = [m.content for m, t in zip(seg.messages(history), seg.trainable(history),
                                         strict=True) if t]
    check_sequence(tokenizer, out, seg.messages(history), trained)
    assert out.reward_score == 1.0
    # full_history: the whole history, every model turn trained
    server = FakeServer(tokenizer, Oracle(task, Harness.from_name(label)))
    out = rollout(tokenizer, server, row_kwargs(task, label), segment_mode="full_history")
    last = max(i for i, m in enumerate(history) if m.role == "assistant")
    check_sequence(tokenizer, out, history[: last + 1], [g.text for g in episode.generations])
    assert out.reward_score == 1.0
    assert out.num_turns == expected_num_turns(history)


def test_auto_mode_follows_the_trainer(tokenizer, tasks) -> None:
    task = tasks["answer"]
    kwargs = row_kwargs(task, WINDOW_PLAN)
    classic = rollout(tokenizer, FakeServer(tokenizer, Oracle(task, Harness.from_name(
        WINDOW_PLAN))), kwargs)
    queue = rollout(tokenizer, FakeServer(tokenizer, Oracle(task, Harness.from_name(
        WINDOW_PLAN))), kwargs, cfg=config(transfer_queue=True))
    assert isinstance(classic, AgentLoopOutput)
    assert isinstance(queue, list) and len(queue) > 1
    assert classic.response_ids == queue[-1].response_ids


@pytest.mark.parametrize("label", LABELS)
def test_do_nothing_scores_zero(tokenizer, tasks, label) -> None:
    task = tasks["answer"]
    episode, recorder = reference(task, label, DoNothing())
    server = FakeServer(tokenizer, DoNothing())
    out = rollout(tokenizer, server, row_kwargs(task, label), segment_mode="full_history")
    assert server.views == recorder.views
    assert out.reward_score == 0.0 == episode.reward
    assert out.extra_fields["reward_extra_info"] == {"success": 0.0, "acc": 0.0,
                                                     "turns": float(episode.turns),
                                                     "checker_error": 0.0,
                                                     # no call: none looked first, none
                                                     # failed (-1: not applicable)
                                                     "tool_calls": 0.0, "tool_errors": 0.0,
                                                     "recovered": -1.0, "repeats": 0.0,
                                                     "looked_first": -1.0,
                                                     "model_calls": float(episode.turns),
                                                     "prompt_tokens": server.prompt_tokens,
                                                     "completion_tokens":
                                                         server.completion_tokens}
    check_sequence(tokenizer, out, episode.messages, [g.text for g in episode.generations])
    # react answers at once; plan_act and act_verify add one injected turn
    assert out.num_turns == (2 if label == FULL else 4)


def test_truncation_inside_a_model_turn(tokenizer, tasks) -> None:
    task = tasks["answer"]
    full = rollout(tokenizer, FakeServer(tokenizer, Oracle(task, Harness.from_name(FULL))),
                   row_kwargs(task, FULL), segment_mode="last_segment")
    second = [i for i in range(1, len(full.response_mask))
              if full.response_mask[i] and not full.response_mask[i - 1]][0]
    limit = second + 3  # three tokens of the second model turn fit
    server = FakeServer(tokenizer, Oracle(task, Harness.from_name(FULL)))
    out = rollout(tokenizer, server, row_kwargs(task, FULL), cfg=config(limit),
                  segment_mode="last_segment")
    assert len(out.response_ids) == limit
    assert out.response_ids == full.response_ids[:limit]
    assert out.response_mask[-3:] == [1, 1, 1]
    assert server.max_tokens == [limit, 3]  # the second call was given only what was left
    assert out.extra_fields["hscale_termination"] == "length"
    assert out.extra_fields["hscale_parse_errors"] == 0  # the cut turn was never parsed
    assert out.reward_score == 0.0  # graded on the final answer, which never came


def test_truncation_inside_an_observation(tokenizer, tasks) -> None:
    task = tasks["answer"]
    full = rollout(tokenizer, FakeServer(tokenizer, Oracle(task, Harness.from_name(FULL))),
                   row_kwargs(task, FULL), segment_mode="last_segment")
    first_end = full.response_mask.index(0)
    limit = first_end + 2  # the first observation does not fit
    server = FakeServer(tokenizer, Oracle(task, Harness.from_name(FULL)))
    out = rollout(tokenizer, server, row_kwargs(task, FULL), cfg=config(limit),
                  segment_mode="last_segment")
    assert len(server.views) == 1
    assert out.response_ids == full.response_ids[:limit]
    assert out.response_mask == [1] * first_end + [0, 0]
    assert out.extra_fields["hscale_termination"] == "length"
    assert out.num_turns == 2  # the prompt and one model turn; the cut observation not counted


@dataclass
class Nudge(Workflow):
    """The first turn without a tool call is let through (CONTINUE, nothing added)."""

    _nudged: bool = field(default=False, init=False, repr=False, compare=False)

    def start(self, messages: list[Message]) -> list[Message]:
        self._nudged = False
        return messages

    def after_assistant(self, turn: int, parsed: Any, text: str) -> Action:
        if parsed is None and not self._nudged:
            self._nudged = True
            return continue_("wait")
        return super().after_assistant(turn, parsed, text)


def nudge_harness() -> Harness:
    return Harness.from_names({"workflow": "test_nudge"}, name="test_nudge")


@pytest.fixture
def nudge() -> Any:
    """Register the Nudge workflow and a harness preset using it, for one test only."""
    register("workflow", "test_nudge")(Nudge)
    PRESETS.register("test_nudge", nudge_harness)
    yield
    unregister("workflow/test_nudge")
    PRESETS.unregister("test_nudge")


def test_continue_without_new_messages_adds_only_a_generation_prompt(tokenizer, tasks,
                                                                     nudge) -> None:
    """A CONTINUE that adds no message: the model is called again on the same view."""
    task = tasks["answer"]
    episode, recorder = reference(task, "test_nudge", DoNothing())
    assert [m.role for m in episode.messages[-2:]] == ["assistant", "assistant"]
    server = FakeServer(tokenizer, DoNothing())
    out = rollout(tokenizer, server, row_kwargs(task, "test_nudge"), segment_mode="full_history")
    assert server.views == recorder.views
    check_sequence(tokenizer, out, episode.messages, [g.text for g in episode.generations])
    assert out.num_turns == 3


def test_callers_max_tokens_is_kept_when_smaller(tokenizer, tasks) -> None:
    task = tasks["answer"]
    server = FakeServer(tokenizer, Oracle(task, Harness.from_name(FULL)))
    out = rollout(tokenizer, server, row_kwargs(task, FULL), segment_mode="last_segment",
                  sampling={"temperature": 1.0, "max_tokens": 5})
    # a per-turn cap below the budget cuts turns without ending the rollout (as in veRL)
    assert server.max_tokens == [5] * len(server.views) and len(server.views) > 1
    assert max(len(r) for r in model_runs(out)) == 5
    assert out.extra_fields["hscale_termination"] != "length"


def test_no_logprobs_from_server(tokenizer, tasks) -> None:
    task = tasks["answer"]
    server = FakeServer(tokenizer, Oracle(task, Harness.from_name(FULL)), logprobs=False)
    out = rollout(tokenizer, server, row_kwargs(task, FULL), segment_mode="last_segment")
    assert out.response_logprobs is None
    assert out.reward_score == 1.0


def test_output_goes_through_verls_postprocessing(tokenizer, tasks) -> None:
    """The classic worker pads our output and puts the reward on the last response token."""
    task = tasks["answer"]
    server = FakeServer(tokenizer, Oracle(task, Harness.from_name(COMPACT_VERIFY)))
    kwargs = row_kwargs(task, COMPACT_VERIFY)
    out = rollout(tokenizer, server, kwargs)  # auto under the classic worker: one output

    worker = object.__new__(AgentLoopWorker)
    worker.tokenizer, worker.processor, worker.mm_processor_kwargs = tokenizer, None, {}
    worker.rollout_config = OmegaConf.create({"prompt_length": 4096, "response_length": 4096})
    worker.reward_loop_worker_handles, worker.distillation_enabled = None, False
    internal = asyncio.run(worker._agent_loop_postprocess(out, validate=False, **kwargs))
    batch = AgentLoopWorker._postprocess(worker, [internal])
    n = len(out.response_ids)
    assert batch.batch["response_mask"][0, :n].tolist() == out.response_mask
    assert batch.batch["response_mask"][0, n:].sum() == 0
    assert batch.batch["rm_scores"][0, n - 1] == 1.0
    assert batch.batch["rm_scores"].sum() == 1.0
    assert batch.non_tensor_batch["success"].tolist() == [1.0]
    assert batch.non_tensor_batch["hscale_harness"].tolist() == [COMPACT_VERIFY]


def test_rows_through_parquet_and_verls_dataset(tokenizer, tasks, tmp_path) -> None:
    picked = list(tasks.values())
    frame = vl.to_verl_rows(picked, [FULL, WINDOW_PLAN], "train")
    assert list(frame.columns) == ["data_source", "prompt", "ability", "reward_model",
                                   "agent_name", "extra_info"]
    assert len(frame) == 4 and frame["extra_info"].map(lambda e: e["index"]).tolist() == [0, 1,
                                                                                        2, 3]
    first = frame.iloc[1]
    h = Harness.from_name(WINDOW_PLAN)
    assert first["prompt"] == [{"role": m.role, "content": m.content}
                               for m in h.start(picked[0].user_query)]
    assert first["agent_name"] == "hscale_harness"
    assert first["ability"] == picked[0].category
    assert first["reward_model"]["style"] == "rule"
    path = tmp_path / "train.parquet"
    frame.to_parquet(path)
    dataset = RLHFDataset(str(path), tokenizer, OmegaConf.create({
        "max_prompt_length": 4096, "cache_dir": str(tmp_path / "cache"),
        "filter_overlong_prompts_workers": 1}))
    assert len(dataset) == 4
    item = dataset[3]
    kwargs = {k: v for k, v in item.items() if k != "dummy_tensor"}
    task = picked[1]
    server = FakeServer(tokenizer, Oracle(task, Harness.from_name(WINDOW_PLAN)))
    out = rollout(tokenizer, server, kwargs, segment_mode="full_history")
    assert out.reward_score == 1.0
    assert out.extra_fields["hscale_task_id"] == task.task_id
    assert server.views[0] == [Message(m["role"], m["content"]) for m in item["raw_prompt"]]


def test_rows_per_task_labels_and_errors(tasks) -> None:
    picked = list(tasks.values())
    frame = vl.to_verl_rows(picked, {picked[0].task_id: [FULL],
                                     picked[1].task_id: [WINDOW_PLAN, COMPACT_VERIFY]}, "eval")
    assert frame["extra_info"].map(lambda e: e["harness"]).tolist() == [
        FULL, WINDOW_PLAN, COMPACT_VERIFY]
    assert set(frame["extra_info"].map(lambda e: e["split"])) == {"eval"}
    with pytest.raises(HscaleError, match="no harness labels"):
        vl.to_verl_rows(picked, {picked[0].task_id: [FULL]}, "train")
    with pytest.raises(HscaleError, match="list of labels"):
        vl.to_verl_rows(picked, FULL, "train")


def test_bad_rows_and_modes_are_reported(tokenizer, tasks) -> None:
    server = FakeServer(tokenizer, DoNothing())
    with pytest.raises(HscaleError, match="no extra_info"):
        rollout(tokenizer, server, {"raw_prompt": []})
    kwargs = row_kwargs(tasks["answer"], FULL)
    with pytest.raises(HscaleError, match="'harness'"):
        rollout(tokenizer, server, {**kwargs, "extra_info": {**kwargs["extra_info"],
                                                             "harness": ""}})
    cfg = config()

    async def build() -> Any:
        return vl.HscaleAgentLoop(
            trainer_config=DictConfigWrap(config=cfg), server_manager=server,
            tokenizer=tokenizer, processor=None, dataset_cls=RLHFDataset,
            data_config=DictConfigWrap(cfg.data), segment_mode="everything")
    with pytest.raises(HscaleError, match="segment_mode"):
        asyncio.run(build())
    with pytest.raises(HscaleError, match="segment_mode"):
        vl.write_agent_loop_config("unused.yaml", segment_mode="everything")


def test_agent_loop_config_file(tmp_path) -> None:
    path = vl.write_agent_loop_config(tmp_path / "agent.yaml", segment_mode="segments")
    entries = OmegaConf.load(path)
    assert [e.name for e in entries] == ["hscale_harness"]
    assert entries[0]["_target_"] == vl.CLASS_PATH
    assert entries[0].segment_mode == "segments"


# ------------------------------------------------------------------------------- registration


class PerRequestServer:
    """One scripted policy per request id (a rollout keeps one sticky request id)."""

    def __init__(self, tokenizer: Any, make_policy: Any) -> None:
        self.tokenizer, self.make_policy, self.servers = tokenizer, make_policy, {}

    async def generate(self, request_id: str, *, prompt_ids: list[int],
                       sampling_params: dict[str, Any], **kwargs: Any) -> TokenOutput:
        if request_id not in self.servers:
            self.servers[request_id] = FakeServer(self.tokenizer, self.make_policy())
        return await self.servers[request_id].generate(
            request_id, prompt_ids=prompt_ids, sampling_params=sampling_params, **kwargs)


@pytest.fixture
def fresh_worker_registry(monkeypatch):
    """A veRL worker process's state: the registry without our entry, our class not built."""
    from verl.experimental.agent_loop import agent_loop as al

    monkeypatch.setattr(al, "_agent_loop_registry", {
        k: v for k, v in al._agent_loop_registry.items() if k != vl.AGENT_NAME})
    vl._agent_loop_class.cache_clear()
    yield al
    vl._agent_loop_class.cache_clear()


def test_agent_loop_settings_survive_later_rollouts(tokenizer, tasks, tmp_path,
                                                    fresh_worker_registry, monkeypatch):
    """Through veRL's own AgentLoopWorker: it loads agent_loop.yaml, then every row builds
    the loop from the registry; the YAML's settings must reach the second and later rows."""
    import os

    import numpy as np
    import verl
    from transformers import LlamaConfig
    from verl.protocol import DataProto

    al = fresh_worker_registry
    model_dir = tmp_path / "model"
    tokenizer.save_pretrained(model_dir)
    LlamaConfig(vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32,
                num_hidden_layers=1, num_attention_heads=2,
                architectures=["LlamaForCausalLM"]).save_pretrained(model_dir)
    path = vl.write_agent_loop_config(tmp_path / "agent.yaml", segment_mode="full_history",
                                      workspace_root=str(tmp_path / "ws"))
    (tmp_path / "ws").mkdir()
    cfg = OmegaConf.load(os.path.join(os.path.dirname(verl.__file__), "trainer", "config",
                                      "_generated_ppo_trainer.yaml"))
    cfg.actor_rollout_ref.model.path = str(model_dir)
    cfg.actor_rollout_ref.rollout.name = "vllm"
    cfg.actor_rollout_ref.rollout.prompt_length = 4096
    cfg.actor_rollout_ref.rollout.response_length = 4096
    cfg.actor_rollout_ref.rollout.agent.agent_loop_config_path = str(path)
    roots = []
    engine = vl.TurnEngine
    monkeypatch.setattr(vl, "TurnEngine", lambda *a: roots.append(a[3]) or engine(*a))
    task = tasks["answer"]
    server = PerRequestServer(tokenizer, lambda: Oracle(task, Harness.from_name(WINDOW_PLAN)))
    worker = al.AgentLoopWorker(cfg, llm_client=server)
    row = row_kwargs(task, WINDOW_PLAN)

    def batch(n: int) -> DataProto:
        rows = {k: np.array([row[k]] * n, dtype=object) for k in row}
        return DataProto.from_dict(non_tensors=rows,
                                   meta_info={"global_steps": 1, "validate": False})

    for n in (3, 2):  # the first batch and a later one
        out = asyncio.run(worker.generate_sequences(batch(n)))
        # full_history trains every model turn of a rollout in one sequence
        assert list(out.non_tensor_batch["hscale_trained_turns"]) == \
            list(out.non_tensor_batch["hscale_turns"])
    assert roots == [str(tmp_path / "ws")] * 5
    assert dict(al._agent_loop_registry[vl.AGENT_NAME])["segment_mode"] == "full_history"


def test_a_greedy_validation_row_is_sampled_at_temperature_zero(tokenizer, tasks):
    """veRL samples all validation rows alike; the greedy pass's rows say so themselves."""
    task = tasks["answer"]
    kwargs = row_kwargs(task, FULL)
    for decoding, want in (("greedy", 0.0), ("sampled", 1.0)):
        server = FakeServer(tokenizer, Oracle(task, Harness.from_name(FULL)))
        rollout(tokenizer, server, {**kwargs, "extra_info": {**kwargs["extra_info"],
                                                            "decoding": decoding}})
        assert set(server.temperatures) == {want}


def test_parsing_and_views_run_off_the_event_loop(tokenizer, tasks, monkeypatch) -> None:
    """A long model turn costs its own episode time, never the loop serving the others."""
    threads: dict[str, set[int]] = {"parse": set(), "view": set(), "loop": set()}
    parse, view = Harness.parse, Harness.view

    def spy(name: str, fn: Any) -> Any:
        def wrapped(self: Any, *args: Any) -> Any:
            threads[name].add(threading.get_ident())
            return fn(self, *args)
        return wrapped

    monkeypatch.setattr(Harness, "parse", spy("parse", parse))
    monkeypatch.setattr(Harness, "view", spy("view", view))
    task, label = tasks["file"], LABELS[0]
    server = FakeServer(tokenizer, Oracle(task, Harness.from_name(label)))

    async def go() -> Any:
        threads["loop"].add(threading.get_ident())
        return await make_loop(tokenizer, server, config()).run(
            {"temperature": 1.0, "logprobs": True}, **row_kwargs(task, label))

    out = asyncio.run(go())
    assert as_list(out)[-1].reward_score == 1.0
    assert threads["parse"] and threads["view"]
    assert not (threads["parse"] | threads["view"]) & threads["loop"]


@pytest.mark.parametrize("label", LABELS)
def test_a_validation_rows_transcript_is_the_episode_the_other_drivers_keep(tokenizer, tasks,
                                                                           label):
    """A val row's reward extras carry its transcript (hscale.harness.transcript), which
    veRL's dump keeps for eval.parquet's transcripts: the same as the reference episode's
    but for the token counts, which here are the server's; a training row carries none."""
    import json

    from hscale.harness import transcript

    task = tasks["answer"]
    episode, _ = reference(task, label, Oracle(task, Harness.from_name(label)))
    kwargs = row_kwargs(task, label)
    val = {**kwargs, "extra_info": {**kwargs["extra_info"], "split": "val"}}
    server = FakeServer(tokenizer, Oracle(task, Harness.from_name(label)))
    extras = as_list(rollout(tokenizer, server, val))[-1].extra_fields["reward_extra_info"]
    kept, want = json.loads(extras["transcript"]), json.loads(transcript(episode))
    assert extras["seconds"] > 0
    assert sum(p for p, _ in kept.pop("tokens")) == server.prompt_tokens
    want.pop("tokens")
    assert kept == want
    trained = as_list(rollout(tokenizer, FakeServer(tokenizer, Oracle(
        task, Harness.from_name(label))), kwargs))[-1].extra_fields["reward_extra_info"]
    assert "transcript" not in trained
