"""``hscale evaluate``: a model across harnesses with no training, into a run folder the
report reads; harness sets, resume after an interruption, one-line errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import hscale.train.lm as lm
from hscale.contracts import Manifest, check_eval, read_status, result_problems
from hscale.errors import HscaleError
from hscale.journal import read_journal
from hscale.train.running import Request, evaluate

# internal: tests the evaluator's internals
from hscale.train.running._evaluate import PARTIAL, harness_sets
from tests.cli import hscale

pytest.importorskip("torch")

LABELS = "S0-T0-O0-C0-W0,S1-T1-O1-C1-W1,S2-T0-O1-C2-W0,oos/shell"


def test_harness_sets():
    default = harness_sets("base+in_space+out_of_space")
    assert {k: len(v) for k, v in default.items()} == {"base": 1, "in_space": 18,
                                                       "out_of_space": 2}
    assert len(harness_sets("all")["in_space"]) == 242
    assert harness_sets(LABELS) == {"base": ["S0-T0-O0-C0-W0"],
                                    "in_space": ["S1-T1-O1-C1-W1", "S2-T0-O1-C2-W0"],
                                    "out_of_space": ["oos/shell"]}
    for bad in ("in_spaec", "S9-T0-O0-C0-W0", "oos/nothing"):
        with pytest.raises(HscaleError):
            harness_sets(bad)


def test_a_design_csv_names_the_harnesses(tmp_path):
    csv = tmp_path / "set.csv"
    csv.write_text("S,T,O,C,W\n0,0,0,0,0\n1,2,0,1,2\n")
    assert harness_sets(str(csv)) == {"base": ["S0-T0-O0-C0-W0"],
                                      "in_space": ["S1-T2-O0-C1-W2"]}


class Counting:
    """A chat model that counts generate calls and can stop after ``stop_after`` of them."""

    def __init__(self, inner, stop_after: int | None = None) -> None:
        self.inner, self.stop_after, self.calls = inner, stop_after, 0
        self.name = inner.name

    def generate(self, *args, **kwargs):
        self.calls += 1
        if self.stop_after is not None and self.calls > self.stop_after:
            raise KeyboardInterrupt
        return self.inner.generate(*args, **kwargs)

    def render(self, messages):
        return self.inner.render(messages)


def request(**changes) -> Request:
    return Request(**{"model": "hscale-tiny", "harnesses": LABELS, "tasks": 3, "max_batch": 4,
                      **changes})


def keyed(frame: pd.DataFrame) -> pd.DataFrame:
    cols = ["decoding", "run", "setting", "harness", "task_id"]
    return frame.sort_values(cols).reset_index(drop=True)[cols + ["reward", "turns"]]


def test_evaluate_writes_a_run_folder_and_resumes_without_loss(tmp_path, monkeypatch):
    real = lm.open_chat_model("hscale-tiny")
    whole = evaluate(request(), tmp_path / "whole")
    evals = pd.read_parquet(whole / "eval.parquet")
    assert len(evals) == 4 * 3 and set(evals.decoding) == {"greedy"}
    problems: list[str] = []
    assert check_eval(evals, "eval.parquet", problems) is not None and problems == []
    manifest = Manifest.read(whole)
    assert result_problems(whole, manifest) == []
    assert read_status(whole).state == "COMPLETED"

    # interrupted after two waves: the finished episodes are saved, and the rerun plays
    # only the rest; greedy episodes come out as in one go
    model = Counting(real, stop_after=2)
    monkeypatch.setattr(lm, "open_chat_model", lambda *a: model)
    with pytest.raises(KeyboardInterrupt):
        evaluate(request(), tmp_path / "cut")
    run_dir = tmp_path / "cut" / "evaluate" / "hscale-tiny" / "0"
    saved = len(read_journal(run_dir / PARTIAL))
    assert 0 < saved < 12 and not (run_dir / "eval.parquet").exists()
    model = Counting(real)
    monkeypatch.setattr(lm, "open_chat_model", lambda *a: model)
    evaluate(request(), tmp_path / "cut")
    assert not (run_dir / PARTIAL).exists()
    pd.testing.assert_frame_equal(keyed(pd.read_parquet(run_dir / "eval.parquet")),
                                  keyed(evals))
    # a finished evaluation is not repeated
    model = Counting(real, stop_after=0)
    monkeypatch.setattr(lm, "open_chat_model", lambda *a: model)
    evaluate(request(), tmp_path / "cut")
    assert model.calls == 0
    # another evaluation under the same name is refused
    with pytest.raises(HscaleError, match="holds another evaluation"):
        evaluate(request(tasks=2), tmp_path / "cut")


def test_the_cli_evaluates_and_the_report_maps_the_model(tmp_path):
    run = hscale("evaluate", "hscale-tiny", "--harnesses", "base+in_space", "--tasks", "2",
                 "--decoding", "both", "--out", str(tmp_path))
    assert run.returncode == 0, run.stderr[-2000:]
    assert "sampled  builtin      in_space" in run.stdout
    report = hscale("report", str(tmp_path / "evaluate"))
    assert report.returncode == 0, report.stderr[-2000:]
    md = (tmp_path / "evaluate" / "report" / "report.md").read_text()
    assert "Harness sensitivity" in md and "Component main effects" in md
    assert (tmp_path / "evaluate" / "report" / "heatmap.png").is_file()
    bad = hscale("evaluate", "hscale-tiny", "--harnesses", "in_spaec", "--out", str(tmp_path))
    assert bad.returncode == 2 and "unknown set 'in_spaec'" in bad.stderr
    assert bad.stderr.count("\n") == 1
    missing = hscale("evaluate", str(tmp_path / "nowhere.pt"), "--out", str(tmp_path / "x"))
    assert missing.returncode == 2 and "no such file" in missing.stderr
    assert not (Path(tmp_path) / "x").exists()


@pytest.mark.slow
def test_smollm2_from_the_package_through_hscale_evaluate(tmp_path):
    """A real pretrained chat model, offline: imported from the package index's GGUF,
    evaluated under the base harness and two others; its own chat template frames the
    harness's messages."""
    # internal: tests the packaged-weights importer
    from hscale.train.lm._importer import find_gguf

    try:
        find_gguf()
    except HscaleError as exc:
        pytest.skip(exc.message)
    labels = "S0-T0-O0-C0-W0,S2-T1-O2-C1-W2,oos/actions"
    run = subprocess.run([sys.executable, "-m", "hscale.cli", "evaluate", "smollm2",
                          "--harnesses", labels, "--tasks", "1", "--max-new-tokens", "48",
                          "--out", str(tmp_path)], capture_output=True, text=True, timeout=1200)
    assert run.returncode == 0, run.stderr[-2000:]
    run_dir = tmp_path / "evaluate" / "smollm2" / "0"
    evals = pd.read_parquet(run_dir / "eval.parquet")
    problems: list[str] = []
    assert check_eval(evals, "eval.parquet", problems) is not None and problems == []
    assert result_problems(run_dir, Manifest.read(run_dir)) == []
    assert sorted(set(evals.harness)) == sorted(labels.split(","))
    assert len(evals) == 3 and (evals.turns >= 1).all()
    # what the model was shown: the harness's view inside SmolLM2's ChatML template
    from hscale.harness import BuiltinWorld, harness_named

    model = lm.open_chat_model("smollm2")
    task = BuiltinWorld().tasks(1, 0, "eval")[0]
    view = harness_named("S0-T0-O0-C0-W0").start(task.user_query)
    prompt = model.render(view)
    assert prompt.startswith("<|im_start|>system\n") and prompt.endswith("<|im_start|>assistant\n")
    assert task.user_query in prompt


def test_black_box_harnesses_are_out_of_space_settings():
    sets = harness_sets("S0-T0-O0-C0-W0,bb/claude-code,bb/openclaw,oos/shell")
    assert sets == {"base": ["S0-T0-O0-C0-W0"],
                    "out_of_space": ["bb/claude-code", "bb/openclaw", "oos/shell"]}
    with pytest.raises(HscaleError, match="unknown harness 'bb/codx'") as info:
        harness_sets("bb/codx")
    assert "did you mean 'bb/codex'" in info.value.hint
