"""Training works: GRPO on a small task set raises greedy and sampled success above the
shipped base model's within 30 steps (slow: about a minute on one core). The harnesses are
ones where the base model has a demonstrator's habit (answering a step early under
act_verify; reading the status field under observation/json), so greedy decoding starts
wrong and only learning, not sharpening alone, can put it right."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("verl")

from hscale.harness import Harness, generate, tokenizer  # noqa: E402

# internal: tests the RL update step
from hscale.train.embedded._rl import Hyper, update  # noqa: E402

# internal: tests the embedded sampler
from hscale.train.embedded._sampler import Sampler  # noqa: E402
from hscale.train.policy import base_model  # noqa: E402

STEPS = 30
LABELS = ("S0-T0-O0-C0-W2", "S1-T2-O1-C0-W0")


def success(sampler: Sampler, jobs, greedy: bool, seed: int) -> float:
    episodes = sampler.run(jobs, greedy=greedy, generator=torch.Generator().manual_seed(seed))
    return float(np.mean([e.success for e in episodes]))


@pytest.mark.slow
def test_grpo_raises_greedy_and_sampled_success_above_the_base_model():
    torch.set_num_threads(1)
    tok = tokenizer()
    model, ref = base_model("hscale-tiny"), base_model("hscale-tiny")
    sampler = Sampler(model, tok)
    tasks = generate(16, seed=7, split="train", categories=("state_tracking", "search"))
    harnesses = [Harness.from_name(label) for label in LABELS]
    jobs = [(h, t) for h in harnesses for t in tasks]
    before = (success(sampler, jobs, True, 0), success(sampler, jobs * 4, False, 1))
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.99))
    gen = torch.Generator().manual_seed(0)
    rng = np.random.default_rng(0)
    for _ in range(STEPS):
        batch = [jobs[i] for i in rng.choice(len(jobs), size=8, replace=False)]
        group_jobs = [job for job in batch for _ in range(8)]
        episodes = sampler.run(group_jobs, generator=gen)
        update(model, ref, opt, tok, episodes, [i // 8 for i in range(len(episodes))],
               Hyper(lr=3e-4), gen)
    after = (success(sampler, jobs, True, 0), success(sampler, jobs * 4, False, 1))
    print(f"greedy {before[0]:.2f} -> {after[0]:.2f}, sampled {before[1]:.2f} -> {after[1]:.2f}")
    assert after[0] > before[0] + 0.1, (before, after)
    assert after[1] > before[1] + 0.1, (before, after)
