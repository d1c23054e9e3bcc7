"""The embedded trainer's AdamW is torch.optim.AdamW's update without its import of
torch._dynamo: the same parameters and state, bit for bit, step after step, and state
dicts that load into each other (a checkpoint of an earlier trainer resumes)."""

from __future__ import annotations

import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

# internal: the trainer's optimizer is not part of the package's API
from hscale.train.embedded._optimizer import AdamW  # noqa: E402
from hscale.train.policy import TinyGPT  # noqa: E402

# internal: a model smaller than any preset's
from hscale.train.policy._model import ModelConfig  # noqa: E402

SETTINGS = {"lr": 3e-4, "betas": (0.9, 0.99), "weight_decay": 0.0}


def model(seed: int) -> TinyGPT:
    torch.manual_seed(seed)
    return TinyGPT(ModelConfig(vocab_size=50, d_model=16, n_layers=1, n_heads=2))


def train(net, opt, steps, seed, skip=()):
    generator = torch.Generator().manual_seed(seed)
    for step in range(steps):
        ids = torch.randint(0, 50, (3, 9), generator=generator)
        opt.zero_grad(set_to_none=True)
        net.logits(net.hidden(ids)).logsumexp(-1).mean().backward()
        if step in skip:  # a parameter without a gradient this step
            net.value_head.weight.grad = None
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()


def same(a, b):
    return all(torch.equal(x, y) for x, y in zip(a.state_dict().values(),
                                                 b.state_dict().values(), strict=True))


@pytest.mark.parametrize("settings", [SETTINGS, {"lr": 1e-2, "weight_decay": 0.1}])
def test_its_steps_are_torchs(settings):
    ours, theirs = model(0), model(0)
    train(ours, AdamW(ours.parameters(), **settings), 7, seed=1, skip={2})
    train(theirs, torch.optim.AdamW(theirs.parameters(), **settings), 7, seed=1, skip={2})
    assert same(ours, theirs)


def test_state_dicts_load_into_each_other_and_go_on_alike():
    start = model(3)
    theirs_opt = torch.optim.AdamW(start.parameters(), **SETTINGS)
    train(start, theirs_opt, 4, seed=5)
    saved = theirs_opt.state_dict()

    resumed = model(0)  # a checkpoint of torch's optimizer, resumed by ours
    resumed.load_state_dict(start.state_dict())
    ours_opt = AdamW(resumed.parameters(), lr=1.0)  # the saved group's settings win
    ours_opt.load_state_dict(saved)
    train(resumed, ours_opt, 3, seed=6)
    train(start, theirs_opt, 3, seed=6)
    assert same(resumed, start)

    back = torch.optim.AdamW(start.parameters(), **SETTINGS)  # and ours into torch's
    back.load_state_dict(ours_opt.state_dict())
    for key, value in back.state_dict()["state"].items():
        for name, tensor in value.items():
            assert torch.equal(tensor, ours_opt.state_dict()["state"][key][name])


def test_it_refuses_the_state_of_other_parameters():
    with pytest.raises(ValueError, match="other parameters"):
        AdamW(model(0).parameters(), lr=1e-3).load_state_dict(
            torch.optim.AdamW(torch.nn.Linear(2, 2).parameters()).state_dict())


def test_a_trainer_process_does_not_import_torch_dynamo():
    code = ("import sys; from hscale.train.embedded import train_run; "
            "from hscale.train.embedded._optimizer import AdamW; import torch; "
            "m = torch.nn.Linear(2, 2); o = AdamW(m.parameters(), lr=0.1); "
            "m(torch.ones(1, 2)).sum().backward(); o.step(); "
            "print('torch._dynamo' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "False"
