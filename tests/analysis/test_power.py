"""Power: components recovered from data with known parts, the SE formula against planted
studies, the command on a runs folder and on a spec, and the report's MDE, which is the
command's for the same comparison."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hscale.analysis import (
    COMPONENTS,
    StudySize,
    compare_arms,
    mde,
    paired_differences,
    synthetic_episodes,
    write_report,
    write_runs,
)

# internal: tests calibration's base-rate helper
from hscale.analysis._calibration import base_rate

# internal: tests the power estimator's pieces
from hscale.analysis._power import estimate, variance

# internal: uses the synthetic runs' default eval sets
from hscale.analysis._synthetic import default_eval_sets

# internal: tests the comparisons table builder
from hscale.analysis._tables import comparisons_table
from hscale.cli import main

TRUE = {"seed": 0.004, "task": 0.02, "harness": 0.006, "seed_task": 0.02, "run": 0.002}
HARNESSES = default_eval_sets()["in_space"][:6]


def known_parts(seeds: int = 12, tasks: int = 40, runs: int = 3, rng: int = 0,
                scale: float = 1.0) -> tuple[pd.DataFrame, dict[str, float]]:
    """Two arms whose success probability is linear in effects of known variance (each arm's
    own effects have half the difference's variance); returns the episodes and the realized
    variances of the difference's parts (the residual from p_true)."""
    gen = np.random.default_rng(rng)
    sizes = {"seed": (seeds,), "task": (tasks,), "harness": (len(HARNESSES),),
             "seed_task": (seeds, tasks), "run": (seeds, runs)}
    drawn = {arm: {k: gen.normal(0, math.sqrt(scale * TRUE[k] / 2), n) for k, n in sizes.items()}
             for arm in ("A", "B")}
    shared = gen.normal(0, 0.1, tasks)  # a task main effect: cancels in pairs

    def prob(grid: pd.DataFrame) -> np.ndarray:
        s = grid["seed"].to_numpy()
        t = grid["task_id"].cat.codes.to_numpy()
        h = grid["harness"].map({x: i for i, x in enumerate(HARNESSES)}).to_numpy(int)
        r = grid["run"].to_numpy()
        at = {"seed": (s,), "task": (t,), "harness": (h,), "seed_task": (s, t), "run": (s, r)}
        p = 0.5 + shared[t]
        for arm in ("A", "B"):
            mine = (grid["arm"] == arm).to_numpy()
            for k, effect in drawn[arm].items():
                p = p + mine * effect[at[k]]
        return np.clip(p, 0, 1)

    episodes = synthetic_episodes(prob, arms=("A", "B"), seeds=range(seeds), runs=runs,
                                  tasks=tasks, eval_sets={"in_space": HARNESSES}, rng=rng)
    realized = {k: float(np.var(drawn["A"][k] - drawn["B"][k], ddof=1)) for k in sizes}
    q = episodes["p_true"].to_numpy()
    realized["residual"] = float(2 * np.mean(q * (1 - q)))
    return episodes.assign(method=episodes["arm"], source="measured", model="m",
                           algorithm="grpo"), realized


def test_components_are_recovered_from_synthetic_data():
    episodes, realized = known_parts()
    comp = estimate(paired_differences(episodes, "A", ["B"]))
    assert comp.notes == []
    for name in COMPONENTS:
        assert comp.values[name] == pytest.approx(realized[name], rel=0.5, abs=0.003), name
    assert comp.values["residual"] == pytest.approx(realized["residual"], rel=0.04)
    # the parts that decide the SE at this design agree closely
    design = StudySize(12, 40, 6, 3)
    assert math.sqrt(comp.variance(design.counts())) == pytest.approx(
        math.sqrt(variance(realized, design.counts())), rel=0.2)
    assert comp.counts == pytest.approx(design.counts())


def test_one_run_folds_into_seed_and_one_seed_is_unknown():
    episodes, _ = known_parts(seeds=4, tasks=12, runs=1)
    comp = estimate(paired_differences(episodes, "A", ["B"]))
    assert comp.values["run"] == 0 and any("run" in n for n in comp.notes)
    assert comp.variance() > 0
    one = episodes[episodes["seed"] == 0]
    comp = estimate(paired_differences(one, "A", ["B"]))
    assert math.isnan(comp.values["seed"]) and math.isnan(comp.variance())


SMALL = {"seed": 0.0008, "task": 0.004, "harness": 0.0005, "seed_task": 0.004, "run": 0.0002,
         "residual": 0.42}


def test_planted_studies_refuse_a_residual_no_binary_outcome_has():
    with pytest.raises(ValueError, match="residual"):
        base_rate({"residual": 0.6})


@pytest.fixture(scope="module")
def pilot(tmp_path_factory):
    episodes, _ = known_parts(seeds=3, tasks=10, runs=2, scale=0.1)
    episodes = episodes.drop(columns=["method", "source", "model", "algorithm"])
    third = episodes[episodes["arm"] == "B"].copy()
    third["arm"] = "C"
    both = pd.concat([episodes, third])
    root = tmp_path_factory.mktemp("runs")
    write_runs(root, both, train_sets={a: [HARNESSES[0]] for a in "ABC"}, steps=5)
    return root / "synthetic"


def test_cli_on_a_runs_folder_plans_seeds_an_arm(pilot, capsys):
    with pytest.raises(SystemExit) as done:
        main(["power", str(pilot), "--reference", "A", "--effect", "10"])
    out = capsys.readouterr().out
    assert done.value.code == 0, out
    for words in ("Each comparison now", "Seeds an arm", "equal allocation", "if low",
                  "one max-t family"):
        assert words in out, words
    with pytest.raises(SystemExit):
        main(["power", str(pilot), "--reference", "A", "--json", "--effect", "10"])
    result = json.loads(capsys.readouterr().out)
    assert [q["question"] for q in result["questions"]] == ["B vs A in-space",
                                                             "C vs A in-space"]
    assert result["seeds"] == {"A": 3, "B": 3, "C": 3}
    assert result["plan_total"] <= result["equal_total"]
    if result["plan_reachable"]:
        assert all(q["power_planned"] >= 0.8 for q in result["questions"])
    low, high = (result["range"][e]["total"] for e in ("low", "high"))
    assert low <= result["plan_total"] <= high


def test_a_pilot_of_one_seed_an_arm_has_no_power_yet_and_says_so(tmp_path, capsys):
    episodes, _ = known_parts(seeds=1, tasks=10, runs=2, scale=0.1)
    episodes = episodes.drop(columns=["method", "source", "model", "algorithm"])
    write_runs(tmp_path, episodes, train_sets={a: [HARNESSES[0]] for a in "AB"}, steps=5)
    with pytest.raises(SystemExit) as done:
        main(["power", str(tmp_path / "synthetic"), "--reference", "A", "--run-sd", "8",
              "--effect", "10"])
    out = capsys.readouterr().out
    assert done.value.code == 0, out
    assert "none yet" in out and "nan" not in out.lower(), out


def _demo_without_hypotheses(tmp_path) -> Path:
    import yaml

    spec = yaml.safe_load(Path("experiments/demo.yaml").read_text())
    spec.pop("hypotheses")
    spec["seeds"] = [0, 1, 2]
    for body in spec["arms"].values():
        (body or {}).pop("seeds", None)
    path = tmp_path / "demo.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


@pytest.mark.slow  # plans and fits a pilot study: about 19 s
def test_cli_on_a_spec_with_stated_components(tmp_path, capsys):
    spec = _demo_without_hypotheses(tmp_path)
    with pytest.raises(SystemExit) as done:
        main(["power", str(spec), "--json", "--effect", "12", "--components",
              "seed=0.002,task=0.01,harness=0.003,seed×task=0.01,run=0.001,residual=0.42"])
    assert done.value.code == 0
    result = json.loads(capsys.readouterr().out)
    # the report's family: 8 arms against structured-18 in-space
    assert len(result["questions"]) == 8 and result["reference"] == "structured-18"
    assert not result["confirmatory"]
    one_run = (0.002 + 0.01 / 36 + 0.001 / 3 + 0.42 / (3 * 36)) / 2  # one arm's half
    for q in result["questions"]:
        assert q["run_sd_pp"] == pytest.approx(100 * math.sqrt(one_run))
        assert q["crossed_sd_pp"] == pytest.approx(100 * math.sqrt(0.01 / 36 + 0.003 / 18))
    assert result["plan_reachable"] and result["plan_total"] <= result["equal_total"]
    saved = tmp_path / "components.json"
    saved.write_text(json.dumps({"components": result["components"]}))
    with pytest.raises(SystemExit) as done:
        main(["power", str(spec), "--components", str(saved), "--effect", "15"])
    out = capsys.readouterr().out
    assert done.value.code == 0 and "Seeds an arm" in out


def test_the_demos_hypotheses_are_planned_alone_and_staged(capsys):
    with pytest.raises(SystemExit) as done:
        main(["power", "experiments/demo.yaml", "--json", "--effect", "12", "--components",
              "seed=0.01,task=0.01,harness=0.002,residual=0.42"])
    assert done.value.code == 0
    result = json.loads(capsys.readouterr().out)
    assert result["confirmatory"] and len(result["questions"]) == 2
    assert [q["question"] for q in result["questions"]] == [
        "H1 structured-18 vs single-harness in-space",
        "H2 structured-18 vs single-harness out-of-space"]
    plan, staged = result["plan"], result["staged"]
    assert abs(plan["structured-18"] - plan["single-harness"]) <= 1
    assert result["plan_total"] <= result["equal_total"]
    assert min(q["power_planned"] for q in result["questions"]) >= 0.8
    assert plan["k1"] == 1  # an arm no hypothesis names keeps its seeds
    for look in staged.values():
        assert look["stages"][-1] == plan["structured-18"]
        assert look["expected_seeds"] < look["stages"][-1] and look["false_rate"] < 0.06


@pytest.mark.parametrize("args, word", [
    (["experiments/demo.yaml"], "--components"),
    (["experiments/demo.yaml", "--components", "seed=0.1,bogus=1"], "bogus"),
    (["experiments/demo.yaml", "--components", "seed=x,residual=0.4"], "not a number"),
    (["experiments/demo.yaml", "--components", "seed=0.001"], "residual"),
    (["experiments/demo.yaml", "--components", "residual=0.4", "--effect", "0"], "--effect"),
    (["no/such/folder"], "neither"),
])
def test_bad_input_is_one_line_exit_2(args, word, capsys):
    with pytest.raises(SystemExit) as done:
        main(["power", *args])
    err = capsys.readouterr().err.strip().splitlines()
    assert done.value.code == 2 and len(err) == 1, err
    assert err[0].startswith("error: ") and word in err[0], err[0]


def test_bad_reference_on_results(pilot, capsys):
    with pytest.raises(SystemExit) as done:
        main(["power", str(pilot), "--reference", "nope"])
    assert done.value.code == 2 and "nope" in capsys.readouterr().err


def test_report_comparisons_carry_an_mde_column():
    episodes, _ = known_parts(seeds=3, tasks=10, runs=2)
    comparisons = compare_arms(episodes, "A")
    assert comparisons["mde"].notna().all() and (comparisons["mde"] > 0).all()
    row = comparisons.iloc[0]
    assert row["mde"] == pytest.approx(mde(row["se"], df=row["df"], critical=row["crit"]))
    frame = comparisons_table(comparisons).frame
    assert frame["MDE (pp)"].tolist() == [f"{v:.2f}" for v in comparisons["mde"]]
    one = episodes[episodes["seed"] == 0]
    single = compare_arms(one, "A")
    assert single["note"].str.contains("training randomness is not covered").all()
    assert single["mde"].notna().all()  # an MDE over tasks and evaluation noise only


def test_the_report_and_hscale_power_see_the_same_comparison(pilot, tmp_path, capsys):
    """One model: the SE a report prints beside a comparison is the one `hscale power`
    plans from, and so is each arm's run variance."""
    report = write_report(pilot, tmp_path / "report", reported=False, n_boot=100)
    table = pd.read_csv(report.out / "comparisons.csv")
    with pytest.raises(SystemExit) as done:
        main(["power", str(pilot), "--reference", "A", "--json"])
    assert done.value.code == 0
    said = json.loads(capsys.readouterr().out)["questions"]
    assert len(said) == len(table) == 2
    for q in said:
        mine = table[table["method"] == q["arm"]].iloc[0]
        assert mine["se"] == pytest.approx(q["se_pp"])
        assert 100 * math.sqrt(mine["var_run"]) == pytest.approx(q["run_sd_pp"])
