"""The embedded trainer on the seconds-sized ``hscale-test`` base model: GRPO and PPO steps
with veRL's math, Harness-S rescue under each router, evaluation rows, determinism."""

from __future__ import annotations

import html
import json
import math
from pathlib import Path

import pandas as pd
import pytest
import yaml

pytest.importorskip("torch")
pytest.importorskip("verl")

from hscale.contracts import Manifest  # noqa: E402

# internal: drives the embedded Trainer directly
from hscale.train.embedded._trainer import Trainer  # noqa: E402
from hscale.train.planning import plan  # noqa: E402

BASE = {
    "name": "tiny", "model": "hscale-test",
    "benchmark": {"name": "builtin", "tasks": 24, "seed": 0},
    "algorithm": {"name": "grpo", "tasks_per_step": 3, "rollouts": 2, "lr": 1e-3},
    "steps": 2, "seeds": [0],
    "evaluation": {"in_space": 18, "out_of_space": ["oos/shell"], "runs": 2, "tasks": 4,
                   "episodes": 4, "base_model": False},
    "defaults": {"train": {"recipe": "structured", "runs": 18},
                 "assignment": {"mode": "locality", "k": 2}},
}


def planned(tmp_path: Path, arms: dict, **changes) -> dict[str, tuple[Path, Manifest]]:
    spec = tmp_path / "tiny.yaml"
    spec.write_text(yaml.safe_dump({**BASE, "arms": arms, **changes}))
    return {item.path.parent.name: (item.path, Manifest.read(item.path))
            for item in plan(spec, tmp_path / "runs")}


def test_the_base_model_run_evaluates_the_episodes_every_arm_of_its_seed_does(tmp_path):
    runs = planned(tmp_path, {"structured-18": {}},
                   evaluation={**BASE["evaluation"], "base_model": True})
    rows = {}
    for arm, (run_dir, manifest) in runs.items():
        Trainer(run_dir, manifest).run()
        rows[arm] = pd.read_parquet(run_dir / "eval.parquet")
    reference = runs["base-model"][0]
    assert pd.read_parquet(reference / "train.parquet").empty
    assert set(rows["base-model"].step) == {0} and set(rows["structured-18"].step) == {2}
    keys = ["setting", "harness", "task_id", "run", "decoding"]
    ordered = {arm: frame.sort_values(keys, ignore_index=True)[keys]
               for arm, frame in rows.items()}
    pd.testing.assert_frame_equal(ordered["base-model"], ordered["structured-18"])


def test_grpo_run_writes_per_step_metrics_and_contracted_eval_rows(tmp_path):
    (run_dir, manifest), = planned(tmp_path, {"structured-18": {}}).values()
    Trainer(run_dir, manifest).run()
    train = pd.read_parquet(run_dir / "train.parquet")
    assert train.step.tolist() == [0, 1]
    for column in ("reward_mean", "effective_group_rate", "entropy", "clip_frac", "kl",
                   "tokens_per_s"):
        assert train[column].notna().all(), column
    assert (train.episodes == 3 * 2).all()
    assert (train.entropy > 0).all() and (train.tokens_per_s > 0).all()
    evals = pd.read_parquet(run_dir / "eval.parquet")
    assert set(evals.setting) == {"base", "in_space", "out_of_space"}
    assert set(evals.decoding) == {"greedy", "sampled"}
    sampled = evals[evals.decoding == "sampled"]
    assert sorted(sampled.run.unique()) == [0, 1] and (evals[evals.decoding == "greedy"].run
                                                       == 0).all()
    # episodes per setting and run: 4, spread over the setting's harnesses
    per = sampled[sampled.run == 0].groupby("setting").size()
    assert per["base"] == 4 and per["out_of_space"] == 4 and per["in_space"] == 18
    assert evals.task_id.str.startswith("eval-").all()


def test_same_manifest_and_seed_give_identical_results(tmp_path):
    (run_dir, manifest), = planned(tmp_path, {"k1": {"assignment": {"k": 1}}}).values()
    Trainer(run_dir, manifest).run()
    first = pd.read_parquet(run_dir / "eval.parquet")
    for name in ("train.parquet", "eval.parquet", "checkpoint.pt"):
        (run_dir / name).unlink()
    Trainer(run_dir, manifest).run()
    pd.testing.assert_frame_equal(pd.read_parquet(run_dir / "eval.parquet"), first)


def test_ppo_trains_a_value_head_with_gae(tmp_path):
    runs = planned(tmp_path, {"ppo": {"algorithm": {"name": "ppo", "tasks_per_step": 4,
                                                    "lr": 1e-3}}})
    run_dir, manifest = runs["ppo"]
    trainer = Trainer(run_dir, manifest)
    before = trainer.model.value_head.weight.detach().clone()
    trainer.run()
    train = pd.read_parquet(run_dir / "train.parquet")
    assert (train.episodes == 4).all() and (train.trained_sequences > 0).all()
    assert not trainer.model.value_head.weight.detach().equal(before)


@pytest.mark.parametrize("router", ["original", pytest.param("random", marks=pytest.mark.slow),
                                    "nearest", "rule",
                                    pytest.param("profile", marks=pytest.mark.slow)])
def test_rescue_replaces_zero_signal_groups_with_routed_siblings(tmp_path, router):
    arm = {"train": "single", "assignment": {"mode": "rescue", "router": router, "group": 3,
                                             "k": 1}}
    (run_dir, manifest), = planned(tmp_path, {"rescue": arm}).values()
    trainer = Trainer(run_dir, manifest)
    picked = []
    pick = trainer.router.pick
    trainer.router.pick = lambda task, k: picked.append(pick(task, k)) or picked[-1]
    trainer.run()
    train = pd.read_parquet(run_dir / "train.parquet")
    # the test model rarely succeeds: zero-signal groups occur and each gets 3 siblings
    assert (train.rescue_groups > 0).any()
    assert (train.extra_rollouts == train.rescue_groups * 3 / train.episodes).all()
    assert all(len(p) == 3 for p in picked)
    pool = set(manifest.assignment.pool)
    base = manifest.train_harnesses[0]
    if router == "original":
        assert all(set(p) == {base} for p in picked)
    else:
        assert all(set(p) <= pool for p in picked)
    if router in ("rule", "profile"):
        assert trainer.router.score
    rescue = train.rescue_success.dropna()
    assert ((rescue >= 0) & (rescue <= 1)).all() and not math.isnan(train.zero_signal_share[0])


def test_a_replanned_run_starts_over_instead_of_resuming_another_manifest(tmp_path):
    (run_dir, manifest), = planned(tmp_path, {"k1": {"assignment": {"k": 1}}}).values()
    Trainer(run_dir, manifest).run()
    assert len(pd.read_parquet(run_dir / "train.parquet")) == 2
    changed = manifest.model_copy(update={
        "hash": "0" * 64, "budget": manifest.budget.model_copy(update={"steps": 1})})
    trainer = Trainer(run_dir, changed)
    assert trainer.step == 0 and len(trainer.results.train) == 0
    trainer.run()
    assert pd.read_parquet(run_dir / "train.parquet").step.tolist() == [0]


def test_the_specs_trackers_log_every_step(tmp_path):
    """Both backends log through veRL's Tracking; its file logger writes the run's steps."""
    (run_dir, manifest), = planned(tmp_path, {"k1": {"assignment": {"k": 1}}},
                                   tracking=["file"]).values()
    trainer = Trainer(run_dir, manifest)
    trainer.run()
    del trainer  # the file logger flushes when it goes
    lines = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [line["step"] for line in lines] == [0, 1]
    assert "reward_mean" in lines[0]["data"]


def test_kept_rollouts_are_the_stated_share_and_every_rescue_and_change_no_result(tmp_path):
    """``keep_rollouts`` keeps the groups kept_group picks, every zero-signal group and the
    siblings' rollouts that replaced it, with transcripts; training and evaluation are the
    same as without it."""
    from hscale.contracts import kept_group

    (tmp_path / "kept").mkdir()
    (tmp_path / "plain").mkdir()
    arm = {"train": "single", "assignment": {"mode": "rescue", "router": "random", "group": 3,
                                             "k": 1}}
    (run_dir, manifest), = planned(tmp_path / "kept", {"rescue": arm},
                                   keep_rollouts=0.5).values()
    assert manifest.keep_rollouts == 0.5
    Trainer(run_dir, manifest).run()
    (plain_dir, plain), = planned(tmp_path / "plain", {"rescue": arm}).values()
    Trainer(plain_dir, plain).run()
    assert plain.keep_rollouts is None and not (plain_dir / "rollouts.parquet").exists()
    pd.testing.assert_frame_equal(pd.read_parquet(run_dir / "eval.parquet"),
                                  pd.read_parquet(plain_dir / "eval.parquet"))
    metrics = ["reward_mean", "success_rate", "rescue_groups", "loss"]
    train = pd.read_parquet(run_dir / "train.parquet")
    pd.testing.assert_frame_equal(train[metrics],
                                  pd.read_parquet(plain_dir / "train.parquet")[metrics])

    kept = pd.read_parquet(run_dir / "rollouts.parquet")
    assert kept.transcript.map(lambda t: json.loads(t)["messages"][0][0]).eq("system").all()
    for step, rows in kept.groupby("step"):
        zero = rows[rows.role == "zero-signal"]
        assert zero.group.nunique() == train.rescue_groups[step]
        assert not zero.success.any() and (zero.groupby("group").size() == 2).all()
        rescue = rows[rows.role == "rescue"]
        assert set(rescue.group) == set(zero.group)
        assert (rescue.groupby("group").size() == 3).all()
        assert (rescue.harness != manifest.train_harnesses[0]).all()
        sampled = set(rows[rows.role == "sampled"].group)
        picked = {g for g in range(3) if kept_group(manifest, int(step), g)}
        assert sampled == picked - set(zero.group)
    assert (kept.prompt_tokens > 0).all() and (kept.seconds > 0).all()

    # hscale view shows each zero-signal group with the rollouts that rescued it
    from hscale.analysis import Study

    # internal: tests the viewer's page builders
    from hscale.analysis._view_app import episode_page

    study = Study(run_dir)
    zero = study.select({"source": "rollout", "role": "zero-signal"})
    assert len(zero) == (kept.role == "zero-signal").sum()
    first = int(zero.index[0])
    rescuers = study.group(first)
    assert set(rescuers.role) == {"zero-signal", "rescue"} or set(rescuers.role) == {"rescue"}
    assert (rescuers.role == "rescue").sum() == 3
    page = html.unescape(episode_page(study, first))
    assert "siblings' rollouts that replaced it" in page and "/compare?a=" in page
    assert study.episode(first)["transcript"]["reward"] == 0.0
