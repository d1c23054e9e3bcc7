"""The embedded trainer's speed on this machine, one torch thread (as each worker runs):

- rollout tokens/s of the batched, KV-cached sampler against a plain generate loop of the
  same model that a user would write first (one episode at a time, the whole sequence
  re-encoded for every new token, no cache); target at least 3x;
- the sampler choosing each tick's width (hscale.train.embedded._sampler.tick_width) against the
  fixed width it used before (every row padded to the widest chunk): time and padded
  positions on the same episodes; target at least 1.2x;
- training tokens/s of a GRPO update, and the share of this machine's measured matmul
  throughput (a large fp32 torch.mm) that its forward + backward FLOPs reach.

    python benchmarks/trainer.py [--episodes 128]   (one GRPO step of 16 tasks x 8 rollouts)
"""

from __future__ import annotations

import argparse
import sys
import time

import torch  # noqa: E402

from hscale.harness import factor_space  # noqa: E402
from hscale.harness._engine import Generation  # noqa: E402
from hscale.harness._harness import Harness  # noqa: E402
from hscale.harness._loop import run_episode  # noqa: E402
from hscale.harness._tokenizer import tokenizer  # noqa: E402
from hscale.harness._world import generate  # noqa: E402
from hscale.train.embedded._rl import Hyper, update  # noqa: E402
from hscale.train.embedded._sampler import CHUNK, MAX_NEW_TOKENS, Sampler, view_ids  # noqa: E402
from hscale.train.policy import banned, sequences  # noqa: E402
from hscale.train.policy._warmstart import base_model  # noqa: E402


class PlainPolicy:
    """The straightforward loop: re-run the model on the whole sequence for every token."""

    def __init__(self, model, generator: torch.Generator) -> None:
        self.model, self.tok, self.gen = model, tokenizer(), generator
        self.ban = banned(self.tok)  # the same restricted distribution as the sampler
        self.tokens = 0

    @torch.inference_mode()
    def generate(self, messages) -> Generation:
        ids = view_ids(self.tok, messages, {}) + [self.tok.role["assistant"]]
        out: list[int] = []
        for _ in range(MAX_NEW_TOKENS):
            if len(ids) >= self.model.cfg.max_positions:
                break
            hidden = self.model.hidden(torch.tensor([ids]))
            probs = torch.softmax(self.model.logits(hidden[0, -1]) + self.ban, -1)
            token = int(torch.multinomial(probs, 1, generator=self.gen))
            self.tokens += 1
            if token == self.tok.eos:
                break
            out.append(token)
            ids.append(token)
        return Generation(self.tok.decode(out), tuple(out))


def jobs(n: int) -> list[tuple[Harness, object]]:
    space = factor_space()
    labels = [space.label(c) for c in space.all_configs()]
    tasks = generate(n, seed=11)
    return [(Harness.from_name(labels[(i * 97) % len(labels)]), tasks[i]) for i in range(n)]


def compare_widths(model, work: list, rounds: int = 2) -> float:
    """Seconds of the fixed-width sampler over those of the per-tick width, best of
    ``rounds`` each, taken in turn (other load only ever adds time); prints both."""
    import hscale.train.embedded._sampler as sampler_module

    chosen = sampler_module.tick_width
    best = {"chosen": float("inf"), "fixed": float("inf")}
    positions = {}
    for _ in range(rounds):
        for name, width in (("chosen", chosen), ("fixed", lambda takes, slots: CHUNK)):
            sampler_module.tick_width = width
            try:
                sampler = Sampler(model, tokenizer())
                fed = []
                step = model.step

                def counted(ids, *rest, _step=step, _fed=fed):
                    _fed.append(ids.numel())
                    return _step(ids, *rest)

                model.step = counted
                began = time.perf_counter()
                sampler.run(work, generator=torch.Generator().manual_seed(0))
                best[name] = min(best[name], time.perf_counter() - began)
                stats = sampler.stats
                positions[name] = sum(fed) / (stats.forced + stats.sampled)
            finally:
                sampler_module.tick_width = chosen
                del model.step
    for name in best:
        print(f"rollout: {name:6} tick width {best[name]:6.2f} s, "
              f"{positions[name]:.2f} positions computed per token fed")
    return best["fixed"] / best["chosen"]


def matmul_gflops(seconds: float = 1.0) -> float:
    a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
    torch.mm(a, b)
    began, count = time.perf_counter(), 0
    while time.perf_counter() - began < seconds:
        torch.mm(a, b)
        count += 1
    return 2 * 1024**3 * count / (time.perf_counter() - began) / 1e9


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=128)
    parser.add_argument("--model", default="hscale-tiny")
    args = parser.parse_args()
    torch.set_num_threads(1)
    model = base_model(args.model)
    work = jobs(args.episodes)

    sampler = Sampler(model, tokenizer())
    began = time.perf_counter()
    episodes = sampler.run(work, generator=torch.Generator().manual_seed(0))
    batched_s = time.perf_counter() - began
    batched = sampler.stats.sampled / batched_s

    plain = PlainPolicy(model, torch.Generator().manual_seed(0))
    subset = work[: max(4, args.episodes // 8)]  # the plain loop is slow: time a subset
    began = time.perf_counter()
    for harness, task in subset:
        run_episode(plain, harness, task, max_turns=sampler.max_turns)
    plain_rate = plain.tokens / (time.perf_counter() - began)
    print(f"rollout: batched sampler {batched:8.0f} sampled tokens/s ({len(work)} episodes, "
          f"{sampler.stats.ticks} ticks, {batched_s:.2f} s)")
    print(f"rollout: plain generate  {plain_rate:8.0f} sampled tokens/s ({len(subset)} "
          f"episodes)")
    ratio = batched / plain_rate
    print(f"rollout speed-up {ratio:.1f}x (target >= 3x): {'PASS' if ratio >= 3 else 'MISS'}")

    width_ratio = compare_widths(model, work)
    print(f"tick width chosen per tick vs fixed: {width_ratio:.2f}x faster (target >= 1.2x): "
          f"{'PASS' if width_ratio >= 1.2 else 'MISS'}")

    ref = base_model(args.model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    groups = [i // 4 for i in range(len(episodes))]
    # every rollout trains: give each group one success so no group is skipped
    for i, episode in enumerate(episodes):
        episode.reward = 1.0 if i % 4 == 0 else 0.0
    hp = Hyper(minibatches=1)
    update(model, ref, opt, tokenizer(), episodes, groups, hp, torch.Generator())
    began = time.perf_counter()
    metrics = update(model, ref, opt, tokenizer(), episodes, groups, hp, torch.Generator())
    update_s = time.perf_counter() - began
    seqs = sequences(tokenizer(), episodes, model.cfg.max_positions)
    positions = int((seqs.ids != tokenizer().pad).sum())
    dense = sum(p.numel() for name, p in model.named_parameters()
                if name.startswith("blocks."))
    vocab = model.tok.weight.numel()
    # forward + backward of the trained sequences (3x a forward; every group has signal
    # here) and the reference pass on 16 of them for the KL metric (counted as 16/N of one)
    passes = 3 + min(16, len(seqs)) / len(seqs)
    flops = 2 * passes * (positions * dense + metrics["train_tokens"] * vocab)
    peak = matmul_gflops()
    achieved = flops / update_s / 1e9
    print(f"training: {positions / update_s:8.0f} sequence tokens/s "
          f"({metrics['train_tokens']} trained tokens, {update_s:.2f} s per update)")
    print(f"training: {achieved:.2f} GFLOP/s of {peak:.1f} GFLOP/s measured fp32 matmul "
          f"= {100 * achieved / peak:.1f}% (attention FLOPs not counted)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
