"""Harness-S's evolved pool: a scripted editor's proposals become children whose edits render
as recorded, broken proposals are dropped and counted, the pool is frozen and content-hashed,
and a rescue arm trains with it on the embedded trainer (and veRL's rows carry the same)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from hscale.errors import HscaleError
from hscale.harness import (
    BuiltinWorld,
    DoNothing,
    Edit,
    EditError,
    Harness,
    Oracle,
    apply,
    components_of,
    problem,
    run_episode,
)
from hscale.train.harness_s import Evolution, ScriptedEditor, read_pool, write_pool

# internal: tests evolution's parsing and ordering steps
from hscale.train.harness_s._evolve import cover_order, directions, parse_reply, root_cause
from hscale.train.planning import factor_space, harness_of, harness_space
from tests.cli import hscale

BASE = "S0-T0-O0-C0-W0"
NOTE = "list the files first, then read the one the task names."
REPLIES = [
    {"set": {"notes": {"name": "text", "params": {"text": NOTE,
                                                  "tool_notes": {"read": "exact path."}}}},
     "why": "the model reads paths that are not there"},
    "make the prompt nicer, please",  # no JSON: does not parse
    {"set": {"context": {"name": "window", "params": {"k": 4}}}, "why": "keep more turns"},
    {"set": {"system_prompt": {"name": "text", "params": {"text": "be careful."}}}},  # no {tools}
    # round 2: parents in coverage order (the noted child, the base harness, the window one)
    {"set": {"workflow": "act_verify"}, "why": "check before answering"},
    {"set": {"context": {"name": "window", "params": {"k": 4}}}},  # the same child again
    {"set": {"notes": {"name": "text", "params": {"hide": ["list", "read", "write", "search",
                                                           "calc"]}}}},  # no tool: protocol
]


def test_root_causes_directions_and_coverage_order_on_known_answers():
    failures = {"t1": "wrong call syntax", "t2": "wrong call syntax", "t3": "ran out of turns",
                "t4": "ran out of turns", "t5": "ran out of turns", "t6": "tool error: x",
                "t7": None}
    found = directions(failures, per=2)
    assert [d.causes for d in found] == [("ran out of turns", "wrong call syntax")]
    assert found[0].tasks == (("t3", "t4", "t5"), ("t1", "t2"))  # t6 alone backs nothing
    assert directions({"a": "x"}) == []
    solved = {"base": {"a", "b"}, "c1": {"a", "b", "c"}, "c2": {"d"}, "c3": {"a"}}
    assert cover_order(solved) == ["c1", "c2", "base", "c3"]
    task = BuiltinWorld().tasks(1, 0)[0]
    harness = Harness.from_label(BASE)
    assert root_cause(run_episode(Oracle(task, harness), harness, task)) is None
    assert root_cause(run_episode(DoNothing(), harness, task)) == "answered without a tool call"
    missing = run_episode(Oracle(task, harness.fresh()), harness.fresh(), task)
    from hscale.harness import ToolCall, ToolResult

    missing.reward = 0.0
    missing.tool_calls = [(ToolCall("read", {"path": "x"}),
                           ToolResult(False, error="no file backup/emu.txt"))]
    assert root_cause(missing) == "tool error: no file"  # the same cause whatever the file


def test_every_configuration_of_the_papers_space_keeps_the_protocol():
    space = Harness.from_label(BASE)
    from hscale.harness import factor_space as papers_space

    factors = papers_space()
    for label in factors.labels(factors.all_configs()):
        assert problem(Harness.from_label(label)) is None, label
    assert problem(space) is None


def test_a_reply_is_read_from_a_fence_or_the_first_object_and_bad_ones_say_why():
    edit = parse_reply('sure:\n```json\n{"set": {"context": "window"}, "why": "w"}\n```')
    assert edit.sets() == {"context": {"name": "context/window", "params": {}}}
    assert parse_reply('x {"set": {"workflow": "plan_act"}} y').why == ""
    for bad, words in (("no object", "no JSON"), ('{"set": {"colour": "red"}}', "colour"),
                       ('{"set": {}}', "sets no component"), ('{"why": 1}', "'set'")):
        with pytest.raises(EditError, match=words) as caught:
            parse_reply(bad)
        assert caught.value.reason == "does not parse"
    child = apply(components_of(Harness.from_label(BASE)), edit)
    assert child["context"]["name"] == "context/window" and child["workflow"]["name"] \
        == "workflow/react"


def _play(jobs):
    """The oracle solves the even tasks, and under a harness with notes every task but those
    at 1 mod 4: the base harness fails every odd task, a noted child repairs half of them."""
    out = []
    for harness, task in jobs:
        index = int(task.task_id.rsplit("-", 1)[-1])
        noted = any(type(e).__name__ == "Notes" for e in harness.extras)
        solves = index % 4 != 1 if noted else index % 2 == 0
        policy = Oracle(task, harness.fresh()) if solves else DoNothing()
        out.append(run_episode(policy, harness.fresh(), task))
    return out


def _evolved(tmp_path: Path, replies=REPLIES, rounds=(4, 3)):
    tasks = BuiltinWorld().tasks(12, 0)
    editor = ScriptedEditor(list(replies))
    evolution = Evolution(_play, Harness.from_label(BASE), "harness", tasks[:6], tasks[6:],
                          editor, rounds)
    pool = evolution.run()
    return pool, evolution, editor


def test_a_scripted_editors_proposals_become_children_and_broken_ones_are_counted(tmp_path):
    pool, evolution, editor = _evolved(tmp_path)
    reasons = [d["reason"] for r in pool.rounds for d in r["dropped"]]
    assert sorted(reasons) == ["breaks the protocol", "does not build", "does not parse",
                               "repeats a member"]
    assert [r["proposals"] for r in pool.rounds] == [4, 3]
    assert sum(r["accepted"] for r in pool.rounds) == len(pool.children) == 3
    noted, window, verify = pool.children
    assert noted.edit == {"set": {"notes": {"name": "notes/text", "params": {
        "text": NOTE, "tool_notes": {"read": "exact path."}}}},
        "why": "the model reads paths that are not there"}
    assert noted.parent == BASE and noted.round == 1 and noted.causes
    # the editor was shown the parent and the root cause with the tasks behind it
    assert BASE in editor.asked[0] and noted.causes[0] in editor.asked[0]
    # round 2's parents: the noted child covers most validation tasks, so it is first
    assert verify.round == 2 and verify.parent == noted.name
    # each child renders what its edit records, and nothing else changed
    base = Harness.from_label(BASE)
    built = Harness.from_names(noted.components, name=noted.name)
    assert NOTE in built.render_system() and "read_file: exact path." in built.render_system()
    assert built.render_system().startswith(base.render_system())
    assert "you see the last 4 turns." in Harness.from_names(window.components).render_system()
    assert Harness.from_names(verify.components).workflow.__class__.__name__ == "ActVerify"
    assert "notes" in verify.components  # it keeps its parent's edit
    frame = evolution.evaluations()
    assert set(frame.harness) == {BASE, *pool.names}
    assert set(frame.split) == {"train", "validation"}


def test_the_pool_is_frozen_and_content_hashed(tmp_path):
    pool, _, _ = _evolved(tmp_path)
    path = write_pool(tmp_path / "pool.json", pool)
    again = read_pool(path)
    assert again == pool and again.sha256 == pool.sha256 == json.loads(path.read_text())[
        "sha256"]
    assert all(name.startswith("evo/") for name in again.names)
    raw = json.loads(path.read_text())
    raw["children"][0]["components"]["context"]["params"] = {"k": 9}
    path.write_text(json.dumps(raw))
    with pytest.raises(HscaleError, match="changed after it was frozen"):
        read_pool(path)
    raw = json.loads((write_pool(tmp_path / "p2.json", pool)).read_text())
    raw["rounds"], raw["base"] = [], "S1-T0-O0-C0-W0"
    (tmp_path / "p2.json").write_text(json.dumps(raw))
    with pytest.raises(HscaleError, match="sha256"):
        read_pool(tmp_path / "p2.json")


def _frozen(tmp_path: Path):
    """The scripted editor's pool, frozen in tmp_path/pool.json."""
    pool, _, _ = _evolved(tmp_path)
    write_pool(tmp_path / "pool.json", pool)
    return pool


def _spec(tmp_path: Path, pool: str, router: str, evaluation: dict | None = None,
          verl: bool = False) -> Path:
    """A rescue arm's spec naming ``pool``; ``verl``: on the veRL backend, a hub id for its
    model (never loaded) and groups of the rescue group's size (veRL replaces one by one)."""
    spec = tmp_path / "evolved.yaml"
    spec.write_text(yaml.safe_dump({
        "name": "evolved", "model": "Qwen/Qwen3-4B-Instruct-2507" if verl else "hscale-test",
        "benchmark": {"name": "builtin", "tasks": 24, "seed": 0},
        "algorithm": {"name": "grpo", "tasks_per_step": 3, "rollouts": 3 if verl else 2,
                      "lr": 1e-3},
        "steps": 2, "seeds": [0], **({"backend": "verl"} if verl else {}),
        "evaluation": {"in_space": 18, "out_of_space": ["oos/shell"], "runs": 1, "tasks": 4,
                       "episodes": 4, "base_model": False, **(evaluation or {})},
        "defaults": {"train": "single", "assignment": {"mode": "rescue", "k": 1, "group": 3,
                                                       "pool": pool, "router": router}},
        "arms": {"rescue-evolved": {}}}))
    return spec


@pytest.mark.parametrize("router", ["nearest", "profile"])
def test_a_rescue_arm_trains_with_the_frozen_pool_on_the_embedded_trainer(tmp_path, router):
    pytest.importorskip("torch")
    from hscale.contracts import Manifest

    # internal: drives the embedded Trainer directly
    from hscale.train.embedded._trainer import Trainer
    from hscale.train.planning import plan

    pool = _frozen(tmp_path)
    (item,) = plan(_spec(tmp_path, "pool.json", router), tmp_path / "runs")
    manifest = Manifest.read(item.path)
    assert list(manifest.assignment.pool) == pool.names
    assert manifest.assignment.pool_sha256 == pool.sha256
    trainer = Trainer(item.path, manifest)
    # distance from the base harness: the components each child changed
    assert list(trainer.router.distance) == [1.0, 1.0, 2.0]
    picked = []
    pick = trainer.router.pick
    trainer.router.pick = lambda task, k: picked.append(pick(task, k)) or picked[-1]
    trainer.run()
    train = pd.read_parquet(item.path / "train.parquet")
    assert (train.rescue_groups > 0).any() and picked
    assert all(set(p) <= set(pool.names) for p in picked)
    child = harness_of(manifest, pool.names[0])
    assert NOTE in child.render_system()
    if router == "profile":
        assert trainer.router.score


def test_veRLs_rescue_rows_carry_the_children_and_route_as_the_embedded_trainer(tmp_path):
    from hscale.contracts import Manifest, RescueInfo
    from hscale.train.backends.verl.rescue import rescue_info, router_for
    from hscale.train.harness_s import Router
    from hscale.train.planning import plan

    pool = _frozen(tmp_path)
    (item,) = plan(_spec(tmp_path, "pool.json", "nearest"), tmp_path / "runs")
    manifest = Manifest.read(item.path)
    info = RescueInfo.read(json.loads(json.dumps(rescue_info(manifest).write())))
    assert set(json.loads(info.space)["harnesses"]) == set(pool.names)
    on_verl = router_for(info, 0)
    here = Router("nearest", list(manifest.assignment.pool), manifest.train_harnesses[0],
                  factor_space(manifest), on_verl.rng, harness_space(manifest))
    assert list(on_verl.distance) == list(here.distance)


def test_a_bad_pool_is_one_line_naming_the_arm(tmp_path):
    pool, _, _ = _evolved(tmp_path)
    for name, body in (("missing.json", None), ("other.json", {**pool.record(),
                                                               "format": "x"})):
        if body is not None:
            (tmp_path / name).write_text(json.dumps(body))
        result = hscale("validate", _spec(tmp_path, name, "random"))
        assert result.returncode == 2, result.stderr
        assert "arm rescue-evolved: assignment.pool" in result.stderr
        assert len(result.stderr.strip().splitlines()) <= 2
    spec = _spec(tmp_path, "pool.json", "random")
    body = yaml.safe_load(spec.read_text())
    body["defaults"]["assignment"]["mode"] = "repeat"
    spec.write_text(yaml.safe_dump(body))
    result = hscale("validate", spec)
    assert result.returncode == 2 and "rescue" in result.stderr


def test_hscale_harness_evolve_writes_a_pool_a_spec_plans_with(tmp_path):
    replies = tmp_path / "replies.yaml"
    replies.write_text(yaml.safe_dump(REPLIES))
    out = tmp_path / "pool.json"
    result = hscale("harness", "evolve", "--editor", replies, "--out", out, "--model",
                    "hscale-tiny", "--rounds", "4,3", "--tasks", "8")
    assert result.returncode == 0, result.stderr
    assert "froze" in result.stdout and "1 does not parse" in result.stdout
    pool = read_pool(out)
    episodes = pd.read_parquet(tmp_path / "pool.episodes.parquet")
    assert set(episodes.harness) == {BASE, *pool.names}
    again = hscale("harness", "evolve", "--editor", replies, "--out", out)
    assert again.returncode == 2 and "exists" in again.stderr
    bad = hscale("harness", "evolve", "--editor", replies, "--out", tmp_path / "p.json",
                 "--rounds", "7,x")
    assert bad.returncode == 2 and "--rounds" in bad.stderr
    assert not (tmp_path / "p.json").exists()
    assert hscale("validate", _spec(tmp_path, "pool.json", "random")).returncode == 0
    assert Edit.parse(pool.children[0].edit).sets() == pool.children[0].edit["set"]


@pytest.mark.slow  # 25 s: three checkpoints of the pool; the jobs are checked fast below
def test_a_rescue_arm_evaluates_its_pool_at_every_checkpoint_into_the_reports_tables(tmp_path):
    pytest.importorskip("torch")
    from hscale.analysis import build_report, load_results
    from hscale.contracts import Manifest

    # internal: drives the embedded Trainer directly
    from hscale.train.embedded._trainer import Trainer
    from hscale.train.planning import ROUTER_TASKS, plan

    # internal: tests the workload's job builders
    from hscale.train.planning._workload import router_tasks

    pool = _frozen(tmp_path)
    spec = _spec(tmp_path, "pool.json", "random", {"pool": True, "every": 1})
    (item,) = plan(spec, tmp_path / "runs")
    manifest = Manifest.read(item.path)
    assert list(manifest.eval_sets["pool"]) == [BASE, *pool.names]
    Trainer(item.path, manifest).run()
    frame = pd.read_parquet(item.path / "eval.parquet")
    rows = frame[frame.setting == "pool"]
    assert sorted(set(rows.step)) == [0, 1, 2]
    validation = {t.task_id for t in router_tasks(manifest)}
    assert set(rows.task_id) == validation and len(validation) == ROUTER_TASKS
    held_out = set(frame[frame.setting != "pool"].task_id)
    assert not validation & held_out  # the pool is never measured on eval tasks
    results = load_results(tmp_path / "runs")
    assert "pool" not in set(results.episodes.setting.astype(str))
    report = build_report(results, tmp_path / "report", n_boot=50)
    tables = {t.name: t for t in report.tables}
    local = tables["pool_locality"].data
    assert set(local.harness) == set(pool.names) and (local.step == 0).all()
    solved = rows[rows.step == 0].groupby(["harness", "task_id"]).success.mean() >= 0.5
    for row in local.itertuples():  # repaired: the base harness fails, the sibling solves
        mine, base = solved.loc[row.harness], solved.loc[BASE]
        assert row.repaired == int((mine & ~base).sum())
        assert row.regressed == int((~mine & base).sum())
    comp = tables["pool_complementarity"].data
    assert "oracle union of the siblings" in set(comp.what)
    moving = tables["pool_nonstationarity"].data
    assert list(zip(moving.from_step, moving.to_step, strict=True)) == [(0, 1), (1, 2)]
    assert "pool_ranking" in report.figures


def test_a_pool_evaluated_alone_gives_its_locality_and_complementarity(tmp_path):
    pool = _frozen(tmp_path)
    runs = tmp_path / "runs"
    done = hscale("evaluate", "hscale-tiny", "--harnesses", tmp_path / "pool.json",
                  "--decoding", "both", "--runs", "2", "--out", runs)
    assert done.returncode == 0, done.stderr
    (frame,) = [pd.read_parquet(p) for p in runs.rglob("eval.parquet")]
    assert set(frame.setting) == {"pool"} and set(frame.harness) == {BASE, *pool.names}
    report = hscale("report", runs / "evaluate", "--out", tmp_path / "report")
    assert report.returncode == 0, report.stderr
    local = pd.read_csv(tmp_path / "report" / "pool_locality.csv")
    assert set(local.harness) == set(pool.names)
    comp = pd.read_csv(tmp_path / "report" / "pool_complementarity.csv")
    assert "base harness, pass@2" in set(comp.what)  # two sampled runs for four siblings
    html = (tmp_path / "report" / "report.html").read_text()
    assert "Pool locality" in html and "Reported in the papers" not in html
    # a pool of another space's base harness is refused, naming the file
    spec = tmp_path / "other.yaml"
    spec.write_text(yaml.safe_dump({"name": "other", "arms": {"a": {}}, "space": {
        "name": "tiny", "factors": {"S": ["terse", "sectioned"],
                                    "T": ["json_call", "xml_call"]}}}))
    refused = hscale("evaluate", "hscale-tiny", "--spec", spec, "--harnesses",
                     tmp_path / "pool.json", "--out", tmp_path / "r2")
    assert refused.returncode == 2 and "pool.json" in refused.stderr, refused.stderr
    assert not (tmp_path / "r2").exists()


def test_veRLs_validation_rows_hold_the_same_pool_jobs_as_the_embedded_evaluation(tmp_path):
    pytest.importorskip("verl")
    from hscale.contracts import Manifest
    from hscale.train.backends.verl import prepare_verl_run
    from hscale.train.planning import plan, write_plan

    # internal: tests the workload's job builders
    from hscale.train.planning._workload import eval_jobs

    pool = _frozen(tmp_path)
    (item,) = plan(_spec(tmp_path, "pool.json", "random", {"pool": True}, verl=True),
                   tmp_path / "runs")
    write_plan([item])
    manifest = Manifest.read(item.path)
    val = pd.read_parquet(prepare_verl_run(item.path, manifest, validate=False)["val"])
    info = pd.DataFrame(list(val.extra_info))
    on_verl = info[info.setting == "pool"]
    here = [(j.harness, j.task.task_id) for j in eval_jobs(manifest, runs=[0])
            if j.setting == "pool"]
    assert sorted(zip(on_verl[on_verl.decoding == "greedy"].harness,
                      on_verl[on_verl.decoding == "greedy"].task_id, strict=True)) == sorted(here)
    assert set(json.loads(info.space.iloc[0])["harnesses"]) >= set(pool.names)
