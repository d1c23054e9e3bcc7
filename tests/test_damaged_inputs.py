"""Damaged or odd inputs, by class, as a tester meets them: a run folder whose files are
truncated, of another dtype, missing, or hold the base model alone; an export's filter that
names nothing; a port in use; a spec, pool, plugin or request of the wrong shape. Each gets
one line naming the file or key and what is wrong (exit 2), or is used and what was skipped
is said; never a traceback, and never a message in a library's words (pydantic's class
names, ``NoneType``, ``string indices``)."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.cli import assert_user_error, hscale

ROOT = Path(__file__).resolve().parents[1]
JARGON = re.compile(r"Input should|instance of|NoneType|string indices|has no attribute|"
                    r"Traceback|\b[A-Z][a-z]+(Spec|Training|Settings|Harness)\b")


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    """The quick demo's run folders, played by the scripted policy (seconds)."""
    out = tmp_path_factory.mktemp("demo")
    done = hscale("run", ROOT / "experiments" / "demo.yaml", "--quick", "--backend",
                  "scripted", "--out", out)
    assert done.returncode == 0, done.stderr
    return out / "demo-quick"


@pytest.fixture
def study(demo, tmp_path) -> Path:
    copy = tmp_path / "study"
    subprocess.run(["cp", "-r", str(demo), str(copy)], check=True)
    return copy


def _edit(path: Path, **columns) -> None:
    frame = pd.read_parquet(path)
    for name, values in columns.items():
        frame[name] = values(frame) if callable(values) else values
    frame.to_parquet(path)


def test_a_truncated_eval_file_is_named_as_damaged_not_missing(tmp_path, demo):
    run = tmp_path / "runs" / "k1" / "0"
    run.mkdir(parents=True)
    (run / "eval.parquet").write_bytes((demo / "k1" / "0" / "eval.parquet").read_bytes()[:300])
    done = hscale("view", tmp_path / "runs")
    assert_user_error(done, "k1/0/eval.parquet: damaged")
    assert "no eval.parquet" not in done.stderr


@pytest.mark.slow  # a report and a pilot of the quick demo: 15 s
def test_an_unreadable_run_among_others_is_skipped_and_said(study, tmp_path):
    (study / "k1" / "0" / "eval.parquet").write_bytes(b"garbage")
    for args in (("view", study, "--export", tmp_path / "v.html"),
                 ("report", study, "--n-boot", "100"),
                 ("power", study, "--run-sd", "8")):
        done = hscale(*args)
        assert done.returncode == 0, done.stderr
        assert "k1/0/eval.parquet" in done.stderr and "Traceback" not in done.stderr, args


@pytest.mark.slow  # 30 s in all
@pytest.mark.parametrize("column, values", [
    ("task_id", lambda f: list(range(len(f)))), ("harness", 1.5),
    ("arm", lambda f: [7] * len(f)), ("setting", lambda f: pd.Categorical(f["setting"]))])
def test_a_column_of_another_dtype_is_read_as_the_contract_types_it(study, tmp_path, column,
                                                                    values):
    _edit(study / "k4" / "0" / "eval.parquet", **{column: values})
    reported = (("report", study, "--out", tmp_path / "report", "--n-boot", "100"),) \
        if column == "task_id" else ()  # (the report reads what power and view read)
    for args in (*reported, ("power", study, "--run-sd", "8"),
                 ("view", study, "--export", tmp_path / "v.html")):
        done = hscale(*args)
        assert done.returncode in (0, 2) and "Traceback" not in done.stderr, done.stderr
        if done.returncode == 2:
            assert_user_error(done, "k4/0/eval.parquet")


def test_a_number_column_that_holds_text_is_named(study, tmp_path):
    _edit(study / "k4" / "0" / "eval.parquet", seed=lambda f: ["three"] * len(f))
    done = hscale("report", study, "--out", tmp_path / "report", "--n-boot", "100")
    assert done.returncode == 0
    assert "k4/0/eval.parquet: column seed is not whole numbers (e.g. 'three')" in done.stderr


def test_the_base_model_alone_is_one_line(study):
    for arm in study.iterdir():
        if arm.name != "base-model":
            subprocess.run(["rm", "-r", str(arm)], check=True)
    for args in (("report", study), ("power", study, "--components", "seed=0.002")):
        done = hscale(*args)
        assert_user_error(done)
    assert not (study / "report").exists()


def test_power_names_the_runs_it_could_not_read_and_the_arm_it_lost(study):
    (study / "structured-18" / "0" / "eval.parquet").unlink()
    done = hscale("power", study, "--run-sd", "8")
    assert done.returncode == 0, done.stderr
    assert "structured-18/0/eval.parquet: missing" in done.stderr
    assert "structured-18: planned, but no evaluated episode was read" in done.stderr


def test_a_damaged_transcript_is_a_line_in_the_export_and_a_page_in_the_viewer(study,
                                                                               tmp_path):
    from hscale.analysis import Study, build_view_app

    path = study / "k4" / "0" / "transcripts.parquet"
    _edit(path, transcript=lambda f: ['{"messages": 5'] + list(f["transcript"][1:]))
    out = tmp_path / "k4.html"
    done = hscale("view", study, "--export", out, "--where", "arm=k4")
    assert_user_error(done, "k4/0/transcripts.parquet row 0: a damaged transcript")
    assert not out.exists()
    from starlette.testclient import TestClient

    viewed = Study(study)
    index = int(viewed.select({"arm": "k4"}).index[0])
    client = TestClient(build_view_app(viewed), base_url="http://127.0.0.1")
    page = client.get(f"/episode/{index}")
    assert page.status_code == 200 and "a damaged transcript" in page.text
    assert "Traceback" not in page.text
    (study / "k4" / "0" / "transcripts.parquet").write_bytes(b"not parquet")
    page = TestClient(build_view_app(Study(study)), base_url="http://127.0.0.1") \
        .get(f"/episode/{index}")
    assert page.status_code == 200 and "its transcripts cannot be read" in page.text


@pytest.mark.parametrize("where, says", [
    ("colour=red", "no filter 'colour'"), ("outcome=maybe", "no episode has outcome 'maybe'"),
    ("arm=structured-81", "did you mean 'structured-18'?"),
    ("behaviour=lazy", "no episode has behaviour"),
    ("=x", "not KEY=VALUE")])
def test_an_export_filter_that_names_nothing_is_refused(demo, tmp_path, where, says):
    out = tmp_path / "v.html"
    done = hscale("view", demo, "--export", out, "--where", where)
    assert_user_error(done, says)
    assert not out.exists()


def test_a_port_in_use_is_one_line_before_anything_is_read(demo):
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        port = held.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "hscale.cli", "view", str(demo),
                               "--port", str(port)], capture_output=True, text=True,
                              timeout=60)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"error: --port {port}: cannot listen") and \
        len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "open http" not in done.stdout and "episodes from" not in done.stdout


# --- messages in the user's words --------------------------------------------------------
SPEC = {"name": "m", "model": "hscale-tiny", "steps": 2, "seeds": [0],
        "benchmark": {"name": "builtin", "tasks": 12, "seed": 0},
        "evaluation": {"in_space": 0, "tasks": 2, "episodes": 2, "runs": 1},
        "arms": {"single": {"train": "single", "assignment": {"mode": "repeat", "k": 1}}}}
FACTORS = {"S": ["terse", "manual"], "T": ["json_call", "xml_call"]}


def _with(path: tuple, value) -> dict:
    spec = json.loads(json.dumps(SPEC))
    node = spec
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value
    return spec


@pytest.mark.parametrize("path, value, says", [
    (("space",), {"name": "x", "factors": {**FACTORS, "C": 5}},
     "space.factors.C: 5 is not a factor: a list of levels"),
    (("space",), {"name": "x", "factors": {**FACTORS, "C": ["full", {"realization": "window",
                                                                    "params": {"k": "3"}}]}},
     "param k is '3', not a whole number"),
    (("arms", "sft", "blackbox"), 5, "arms.sft.blackbox: 5 is not a blackbox section"),
    (("arms", "r"), {"train": "single", "assignment": {"mode": "rescue", "router": "rule",
                                                        "k": 1, "pool": 5}},
     "pool: 5 is not a list or text (hint: pool: a rescue arm's siblings"),
    (("steps",), 2.5, "steps: 2.5 is not a whole number"),
    (("name",), None, "name: empty"),
    (("evaluation", "runs"), 0, "evaluation.runs: 0 is less than 1"),
    (("space",), {"name": "x", "factors": FACTORS, "plugins": ["notes.txt"]},
     "plugin notes.txt: not a Python file"),
    (("space",), {"name": "x", "factors": FACTORS, "plugins": ["sub/"]},
     "plugin sub/: is a folder"),
    (("space",), {"name": "x", "factors": FACTORS, "plugins": ["."]},
     "neither a .py file nor a module's dotted name"),
])
def test_a_spec_error_names_the_key_and_the_form_it_takes(tmp_path, path, value, says):
    (tmp_path / "notes.txt").write_text("not python")
    (tmp_path / "sub").mkdir()
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(_with(path, value)))
    done = hscale("validate", spec)
    assert_user_error(done, says)
    assert not JARGON.search(done.stderr), done.stderr


@pytest.mark.parametrize("entry, says", [
    ("a-label", "children[0] is text, not an object"),
    ({"name": "x"}, "children[0] has no parent"),
    ({"name": 5, "parent": "p", "round": 1, "edit": {}, "components": {}},
     "children[0].name is a number, not text"),
])
def test_a_pool_entry_of_the_wrong_shape_is_named(tmp_path, entry, says):
    pool = tmp_path / "pool.json"
    pool.write_text(json.dumps({"format": "hscale-pool/2", "space": "harness",
                                "base": "S0-T0-O0-C0-W0", "children": [entry]}))
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(_with(("arms", "r"), {
        "train": "single", "assignment": {"mode": "rescue", "router": "rule", "k": 1,
                                          "pool": "pool.json"}})))
    done = hscale("validate", spec)
    assert_user_error(done, says)
    assert not JARGON.search(done.stderr), done.stderr


def test_evolve_names_a_folder_editor_and_never_offers_force_for_a_device(tmp_path):
    (tmp_path / "replies").mkdir()
    done = hscale("harness", "evolve", "--editor", tmp_path / "replies", "--out",
                  tmp_path / "pool.json")
    assert_user_error(done, "replies: is a folder, not a file")
    for out in ("/dev/null", tmp_path / "thesis.json"):
        if out != "/dev/null":
            Path(out).write_text('{"mine": 1}')
        for extra in ((), ("--force",)):
            done = hscale("harness", "evolve", "--editor", tmp_path / "replies", "--out",
                          out, *extra)
            assert_user_error(done, f"--out {out}")
            assert "--force" not in done.stderr
    assert (tmp_path / "thesis.json").read_text() == '{"mine": 1}'


@pytest.mark.parametrize("field, value", [("top_p", -0.5), ("top_p", 2), ("stop", 5),
                                          ("stop", ["a"] * 5), ("temperature", 3),
                                          ("frequency_penalty", 9), ("top_k", -1)])
def test_serve_refuses_sampling_fields_the_real_api_refuses(field, value):
    from hscale.train.serving import BadRequest

    # internal: tests the OpenAI-chat request parser
    from hscale.train.serving._openai_chat import parse

    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], field: value}
    with pytest.raises(BadRequest) as info:
        parse(body)
    assert info.value.param == field and field in str(info.value)
