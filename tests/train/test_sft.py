"""Black-box SFT: a teacher's recorded calls become examples rendered as ``hscale serve``
shows them to the student (its template, or the tool prompt), with the loss on the teacher's
reply alone; a few LoRA steps on a tiny model make that reply likelier and leave an ordinary
model folder. The slow test collects through a real CLI first."""

from __future__ import annotations

import json

import pandas as pd
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")

import torch  # noqa: E402

from hscale.harness import HARNESSES  # noqa: E402
from hscale.train.blackbox import fine_tune  # noqa: E402

# internal: tests the SFT example builder
from hscale.train.blackbox._sft import SFTSettings, examples  # noqa: E402

# internal: tests the trajectory sample record
from hscale.train.blackbox._trajectories import Sample  # noqa: E402

BASH = {"type": "object", "properties": {"command": {"type": "string"}}}


def _sample(reward: float = 1.0, reply: str = "", command: str = "cat notes.txt") -> Sample:
    messages = [{"role": "system", "content": "you work in a folder"},
                {"role": "user", "content": "what do the notes say?"}]
    calls = [{"id": "call_1", "name": "bash", "arguments": json.dumps({"command": command})}]
    return Sample("s", 0, 1, "bb/x", "t", reward, (), (), None, json.dumps(messages), reply,
                  json.dumps(calls), json.dumps([{"name": "bash", "description": "a shell",
                                                  "parameters": BASH}]))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from hscale.train.backends.verl.cpu.model import tiny_model

    return tiny_model(tmp_path_factory.mktemp("sft") / "tiny", hidden=64, layers=2)


def _reply_logprob(folder, ids, start) -> float:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(folder).eval()
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0, :-1].log_softmax(-1)
    target = torch.tensor(ids[1:])
    return float(logits.gather(1, target[:, None])[start - 1:].sum())


def test_examples_show_the_student_the_served_prompt_and_train_the_reply_only(tiny):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny)
    [(ids, start)], left = examples(tok, [_sample(), _sample(reward=0.0)], False, 4096)
    assert left == 1  # the unsolved episode
    prompt, reply = tok.decode(ids[:start]), tok.decode(ids[start:])
    assert "# tools" in prompt and '"name": "bash"' in prompt  # hscale's tool prompt
    assert prompt.endswith("<|im_start|>assistant\n")
    assert reply.startswith('<tool_call>{"name": "bash", "arguments": {"command": "cat notes')
    assert reply.rstrip().endswith("<|im_end|>")


@pytest.mark.slow  # 18 s of LoRA steps
def test_lora_steps_make_the_teachers_reply_likelier_and_save_a_model_folder(tiny, tmp_path):
    from transformers import AutoTokenizer

    calls = [_sample(command=c) for c in ("cat notes.txt", "ls -R", "grep -r fox .")]
    tok = AutoTokenizer.from_pretrained(tiny)
    data, _ = examples(tok, calls, False, 4096)
    before = [_reply_logprob(tiny, ids, start) for ids, start in data]
    result = fine_tune(tiny, calls, tmp_path / "sft", SFTSettings(steps=12, batch=3, lr=1e-2))
    after = [_reply_logprob(tmp_path / "sft", ids, start) for ids, start in data]
    assert all(a > b + 1.0 for a, b in zip(after, before, strict=True)), (before, after)
    assert result["examples"] == 3 and len(result["losses"]) == 12
    assert result["losses"][-1] < result["losses"][0]
    saved = json.loads((tmp_path / "sft" / "sft.json").read_text())
    assert saved["settings"]["lora_rank"] == 8 and (tmp_path / "sft" / "config.json").is_file()
    from hscale.train.lm import HFChat

    assert HFChat(tmp_path / "sft", device="cpu").template_tools is False  # loads as a model


def test_no_solved_call_is_one_line_with_the_reason(tiny, tmp_path):
    from hscale.errors import HscaleError

    with pytest.raises(HscaleError, match="no example to fine-tune on"):
        fine_tune(tiny, [_sample(reward=0.0)], tmp_path / "none")
    assert not (tmp_path / "none").exists()


@pytest.mark.slow
def test_black_box_sft_through_a_real_cli_then_an_unseen_one(tiny, tmp_path):
    """Collect the scripted solver through Claude Code (its smallest tool surface),
    fine-tune the tiny model on it, then evaluate the result through Codex CLI, which it
    never saw: the evaluation's run folder passes the contracts."""
    for name in ("bb/codex", "bb/claude-code"):
        if not HARNESSES.get(name).installed():
            pytest.skip(f"{name} is not installed here: hscale harness install {name}")
    from hscale.contracts import EVAL, Manifest, result_problems
    from hscale.train.blackbox import Collection, EpisodeLog, collect, samples
    from hscale.train.running import Request, evaluate

    record = collect(Collection("scripted", "bb/claude-code", tasks=2),
                     tmp_path / "collected")
    calls = samples(record, EpisodeLog(record).read(), exact=False)
    result = fine_tune(tiny, calls, tmp_path / "sft",
                       SFTSettings(steps=2, batch=2, max_tokens=8192))
    assert result["examples"] == len(calls) and len(result["losses"]) == 2
    run = evaluate(Request(model=str(tmp_path / "sft"), harnesses="bb/codex", tasks=1,
                           max_new_tokens=16), tmp_path / "runs")
    assert result_problems(run, Manifest.read(run)) == []
    frame = pd.read_parquet(run / EVAL)
    assert list(frame.harness) == ["bb/codex"] and frame.reward.isin([0.0, 1.0]).all()
