"""One plan, every driver: the same planned run's evaluation played by the embedded trainer's
evaluator, the scripted backend, `hscale evaluate`'s loop and veRL (its val.parquet rows and
its dump import), each with the same scripted policy (the oracle), gives identical rows.

Each driver keeps its own way of playing an episode (the embedded sampler, run_episode,
the chat-model driver, veRL's agent loop); the test replaces only that step by the oracle
played through the one turn engine, so what it checks is everything around it: which
episodes the plan holds, in which order, with which decoding and run, and how each driver
writes the row.

It is also the worked example of a new evaluation setting (``neighbours``: the base harness's
distance-1 neighbours, docs/extending/evaluation-setting.md): the spec turns it on, the plan
holds its episodes, and every driver plays and writes them with no change of its own."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import yaml

from hscale.contracts import COST, Manifest, RowInfo, eval_frame
from hscale.design import neighbours
from hscale.harness import EPISODE_TURNS, Oracle, run_episode
from hscale.harness.verl_agent_loop import episode_fields, row_task
from hscale.train.planning import Recorder, RunPlan, factor_space, harness_of, plan, write_plan

STEP = 2
IDENTITY = ["run", "benchmark", "setting", "harness", "task_id", "decoding", "category"]
OUTCOME = ["reward", "success", "turns"]


def oracle(harness, task):
    return run_episode(Oracle(task, harness), harness, task, max_turns=EPISODE_TURNS)


class OracleSampler:
    """The embedded sampler's interface, every episode the oracle's."""

    model = tok = None
    max_new = 0

    def run(self, jobs, greedy=False, generator=None):
        return [oracle(harness, task) for harness, task in jobs]


@pytest.fixture(scope="module")
def planned(tmp_path_factory):
    root = tmp_path_factory.mktemp("parity")
    spec = root / "parity.yaml"
    spec.write_text(yaml.safe_dump({
        "name": "parity", "model": "Qwen/Qwen3-4B-Instruct-2507", "backend": "verl",
        "benchmark": {"name": "builtin", "tasks": 24, "seed": 0},
        "algorithm": {"name": "grpo", "tasks_per_step": 3, "rollouts": 2, "lr": 1e-3},
        "steps": STEP, "seeds": [1],
        "evaluation": {"in_space": 18, "out_of_space": ["oos/shell", "oos/actions"],
                       "runs": 2, "tasks": 6, "episodes": 9, "base_model": False,
                       "neighbours": True},
        "arms": {"structured-18": {}}}))
    (item,) = plan(spec, root / "runs")
    write_plan([item])
    return item.path, Manifest.read(item.path)


def _rows(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.assign(step=STEP)[["step", *IDENTITY, *OUTCOME, *COST]]
    return frame.sort_values(IDENTITY).reset_index(drop=True)


def embedded(path, manifest) -> pd.DataFrame:
    # internal: tests the checkpoint evaluator
    from hscale.train.embedded._checkpoint_eval import evaluate

    runplan, results = RunPlan(manifest), Recorder(path, manifest, read=False)
    evaluate(OracleSampler(), runplan, runplan.router(), STEP, results)
    return results.eval_rows


def scripted(path, manifest) -> pd.DataFrame:
    from hscale.train.backends import ScriptedBackend

    results = Recorder(path, manifest, read=False)
    ScriptedBackend(error_rate=0.0)._evaluate(RunPlan(manifest), results)
    return results.eval_rows


def evaluate_loop(path, manifest, monkeypatch) -> pd.DataFrame:
    """`hscale evaluate`'s loop (hscale.train.running._evaluate) on the planned run's manifest:
    its model driver replaced by the oracle."""
    # internal: tests the evaluator's internals
    from hscale.train.running import _evaluate as model_eval

    def drive(model, jobs, *, done=None, **options):
        episodes = [oracle(harness, task) for harness, task, _ in jobs]
        for i, ep in enumerate(episodes):
            done(i, ep)
        return episodes

    monkeypatch.setattr("hscale.train.lm.drive", drive)
    return eval_frame(model_eval.play(RunPlan(manifest), model=None, step=STEP))


def verl(path, manifest) -> pd.DataFrame:
    """veRL's side: val.parquet's rows, each played by the oracle as the agent loop reports
    an episode (its reward extras), dumped as veRL dumps them, read back by the import."""
    pytest.importorskip("verl")
    from hscale.train.backends.verl import import_validation, prepare_verl_run

    prepared = prepare_verl_run(path, manifest, validate=False)
    val = pd.read_parquet(prepared["val"])
    lines = []
    for info, truth in zip(val.extra_info, val.reward_model, strict=True):
        info = RowInfo.read(info)
        episode = oracle(harness_of(manifest, info.harness), row_task(info))
        extras = episode_fields(episode, info, 1)["reward_extra_info"]
        lines.append({"input": "", "output": "", "score": episode.reward, "step": STEP,
                      "gts": truth["ground_truth"], **extras})
    dumps = path / "verl" / "validation"
    dumps.mkdir(parents=True, exist_ok=True)
    (dumps / f"{STEP}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return import_validation(path, manifest)


@pytest.fixture(scope="module")
def frames(planned):
    path, manifest = planned
    with pytest.MonkeyPatch.context() as monkeypatch:
        return {"embedded": embedded(path, manifest), "scripted": scripted(path, manifest),
                "evaluate": evaluate_loop(path, manifest, monkeypatch),
                "verl": verl(path, manifest)}


def test_every_driver_plays_the_same_plan_and_writes_the_same_rows(planned, frames):
    path, manifest = planned
    runplan = RunPlan(manifest)
    jobs = runplan.evaluation()
    assert {j.decoding for j in jobs} == {"greedy", "sampled"}
    assert len(jobs) == (1 + 2) * len({(j.setting, j.harness, j.task.task_id, j.run)
                                       for j in jobs if j.decoding == "sampled"}) // 2
    frames = dict(frames)
    want = _rows(frames.pop("embedded"))
    assert len(want) == len(jobs) and want["success"].all()  # the oracle solves them
    for name, frame in frames.items():
        got = _rows(frame)
        assert got[IDENTITY].equals(want[IDENTITY]), name
        assert got[OUTCOME].astype(float).equals(want[OUTCOME].astype(float)), name
        assert got[list(COST)].equals(want[list(COST)]), name  # each counts its cost alike


def test_a_new_outcome_column_reaches_every_driver_through_the_recorder(frames):
    """``termination`` was added as a field of hscale.contracts.Outcome, the line of
    hscale.harness.outcome that reads it and its type in eval.parquet's contract; no driver
    knows of it, and every one (veRL's through its dump's extras) writes it alike."""
    ended = {name: frame.sort_values(IDENTITY)["termination"].tolist()
             for name, frame in frames.items()}
    assert set(ended["embedded"]) == {"answer"}  # the oracle answers every task
    for name, got in ended.items():
        assert got == ended["embedded"], name


def test_every_driver_of_hscales_harnesses_keeps_the_same_transcripts(frames):
    """The transcript (what the model saw, each reply, call and observation, the outcome) is
    one contract: the same episode gives the same JSON whichever driver played it."""
    def kept(frame: pd.DataFrame) -> list[str]:
        return frame.sort_values(IDENTITY)["transcript"].tolist()

    want = kept(frames["embedded"])
    assert all(json.loads(t)["messages"][0][0] == "system" for t in want)
    for name in ("scripted", "evaluate", "verl"):  # veRL's: through its dump's extras
        assert kept(frames[name]) == want, name


def test_a_new_setting_reaches_every_driver_through_the_plan(planned, frames):
    """``evaluation.neighbours`` was added in the spec, a builder of the manifest's eval sets
    and a member of hscale.contracts.Setting (its label and order); no driver knows of it,
    and every one plays it."""
    _, manifest = planned
    space = factor_space(manifest)
    near = [space.label(space.from_index(int(i))) for i in neighbours(space, space.base)]
    assert sorted(manifest.eval_sets["neighbours"]) == sorted(near) and len(near) == 10
    for name, frame in frames.items():
        rows = frame[frame.setting == "neighbours"]
        assert sorted(rows.harness.unique()) == sorted(near), name
        assert set(rows.decoding) == {"greedy", "sampled"}, name


def test_the_kept_training_rollouts_are_the_plans_groups_in_every_driver(tmp_path):
    """``keep_rollouts``: which groups a run keeps is the plan's (hscale.contracts.kept_group
    of each step's schedule rows), so the scripted backend keeps exactly the groups the
    embedded trainer keeps (tests/train/embedded/test_trainer.py checks its side), each
    with the episodes the group played."""
    from hscale.contracts import ROLLOUTS, kept_group
    from hscale.train.backends import ScriptedBackend
    from hscale.train.planning import Schedule

    spec = tmp_path / "kept.yaml"
    spec.write_text(yaml.safe_dump({
        "name": "kept", "benchmark": {"name": "builtin", "tasks": 24, "seed": 0},
        "algorithm": {"name": "grpo", "tasks_per_step": 4, "rollouts": 2},
        "steps": 4, "seeds": [0], "keep_rollouts": 0.5,
        "evaluation": {"in_space": 18, "out_of_space": [], "runs": 1, "tasks": 2,
                       "base_model": False},
        "arms": {"structured-18": {}}}))
    (item,) = plan(spec, tmp_path / "runs")
    write_plan([item])
    manifest = Manifest.read(item.path)
    ScriptedBackend().run(item.path, manifest)
    kept = pd.read_parquet(item.path / ROLLOUTS)
    schedule = Schedule.read(item.path)
    want = [(step, g, t, h) for step in schedule.steps()
            for g, (t, h) in enumerate(schedule.at(step)) if kept_group(manifest, step, g)]
    assert 0 < len(want) < 16
    got = kept[["step", "group", "task_id", "harness"]].drop_duplicates()
    assert [tuple(r) for r in got.itertuples(index=False)] == want
    assert (kept.groupby(["step", "group"]).size() == 2).all()  # the group's rollouts
    assert set(kept.role) == {"sampled"}
    assert all(json.loads(t)["reward"] == r for t, r in zip(kept.transcript, kept.reward,
                                                             strict=True))
