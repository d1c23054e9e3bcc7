"""New harness spaces from a spec: components, realizations (registered, inline, a plugin's),
mixed levels, a sixth factor; what the manifest records; what validate refuses."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from hscale.contracts import MANIFEST, Manifest
from hscale.errors import HscaleError
from hscale.train.planning import factor_space, harness_of
from tests.cli import hscale

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"
NEW_SPACE, SIXTH = EXPERIMENTS / "new-space.yaml", EXPERIMENTS / "sixth-factor.yaml"
PLUGIN = EXPERIMENTS / "new_space_plugin.py"


def _copy(tmp_path: Path, spec: Path = NEW_SPACE, **changes) -> Path:
    """The example spec and its plugin in a folder of their own, with ``changes`` made."""
    shutil.copy(PLUGIN, tmp_path / PLUGIN.name)
    body = yaml.safe_load(spec.read_text())
    body.update(changes)
    out = tmp_path / spec.name
    out.write_text(yaml.safe_dump(body, sort_keys=False))
    return out


def _plan(spec: Path, out: Path) -> dict[str, Manifest]:
    result = hscale("plan", spec, "--out", out)
    assert result.returncode == 0, result.stderr
    return {p.parent.parent.name: Manifest.read(p.parent)
            for p in sorted(out.glob(f"*/*/*/{MANIFEST}"))}


def test_the_manifest_names_every_realization_and_hashes_what_is_not_hscales(tmp_path):
    manifests = _plan(_copy(tmp_path), tmp_path / "runs")
    record = manifests["structured-36"].space
    assert [f.factor for f in record.components] == ["S", "T", "O", "C", "W"]
    levels = {f.factor: {lv.name: lv for lv in f.levels} for f in record.components}
    assert levels["S"]["manual"].realization == "system_prompt/manual"
    assert levels["T"]["action_lines"].realization == "tool_interface/action_lines"
    assert levels["O"]["exit_code"].realization == "observation/exit_code"
    assert levels["C"]["window3"].params == {"k": 3}
    inline, plugged = levels["S"]["brief"], levels["S"]["steps"]
    assert inline.realization == "system_prompt/text" and "{tools}" in inline.params["text"]
    assert len(inline.sha256) == 64
    [plugin] = record.plugins
    assert plugged.sha256 == plugin.sha256 and plugin.path == str(tmp_path / PLUGIN.name)
    assert levels["S"]["terse"].sha256 is None  # hscale's own realizations carry no hash


def test_editing_the_plugin_changes_the_hash_and_a_planned_run_refuses_it(tmp_path):
    spec = _copy(tmp_path)
    before = _plan(spec, tmp_path / "runs")["structured-36"]
    plugin = tmp_path / PLUGIN.name
    plugin.write_text(plugin.read_text() + "\n# a comment is a change too\n")
    with pytest.raises(HscaleError, match="changed after planning"):
        harness_of(Manifest.read(tmp_path / "runs" / "new-space" / "structured-36" / "0"),
                   "S3-T0-O0-C0-W0")
    again = hscale("plan", spec, "--out", tmp_path / "runs")
    assert again.returncode == 2 and "different manifest" in again.stderr
    after = _plan(spec, tmp_path / "other")["structured-36"]
    assert after.hash != before.hash and after.train_harnesses == before.train_harnesses


def test_a_planned_run_moved_to_another_folder_keeps_its_hash(tmp_path):
    """The plugin's path is where it lies, not what it is: two checkouts plan one hash."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = _plan(_copy(tmp_path / "a"), tmp_path / "a" / "runs")
    second = _plan(_copy(tmp_path / "b"), tmp_path / "b" / "runs")
    assert {k: m.hash for k, m in first.items()} == {k: m.hash for k, m in second.items()}


def test_a_label_builds_the_harness_its_levels_name(tmp_path):
    manifest = _plan(_copy(tmp_path), tmp_path / "runs")["structured-36"]
    harness = harness_of(manifest, "S3-T2-O2-C1-W0")
    assert harness.realization_names() == {
        "system_prompt": "system_prompt/steps", "tool_interface": "tool_interface/action_lines",
        "observation": "observation/exit_code", "context": "context/window",
        "workflow": "workflow/react"}
    assert harness.context.k == 3 and harness.name == "S3-T2-O2-C1-W0"
    system = harness.render_system()
    assert system.startswith("1. you do file tasks with tools.") and "action:" in system
    brief = harness_of(manifest, "S2-T0-O0-C0-W0").render_system()
    assert brief.startswith("file tasks, one tool call a turn.")
    assert harness_of(manifest, "oos/shell").name == "oos/shell"  # presets stay reachable


def test_a_sixth_factor_plans_a_strength_2_set_that_design_verify_accepts(tmp_path):
    manifests = _plan(_copy(tmp_path, SIXTH), tmp_path / "runs")
    manifest = manifests["structured-18"]
    space = factor_space(manifest)
    assert space.names == ("S", "T", "O", "C", "W", "R") and space.levels == (3,) * 5 + (2,)
    train = space.parse_labels(list(manifest.train_harnesses))
    held_out = space.parse_labels(list(manifest.eval_sets["in_space"]))
    assert len(train) == 18 and len(held_out) == 18
    assert not set(manifest.train_harnesses) & set(manifest.eval_sets["in_space"])
    path = tmp_path / "train.csv"
    pd.DataFrame(train, columns=space.names).to_csv(path, index=False)
    verified = hscale("design", "verify", path, "--strength", "2", "--levels", "3^5,2^1")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    pd.DataFrame(held_out, columns=space.names).to_csv(path, index=False)
    assert hscale("design", "verify", path, "--levels", "3^5,2^1").returncode == 0
    assert np.isin(train[:, 5], [0, 1]).all() and set(train[:, 5]) == {0, 1}


def test_the_sixth_component_acts_in_every_episode(tmp_path):
    """The plugin's reminder (a component kind of its own) reaches the prompt and each
    observation, and a fresh copy keeps it (what concurrent episodes use)."""
    from hscale.harness import Oracle, generate, run_episode

    manifest = _plan(_copy(tmp_path, SIXTH), tmp_path / "runs")["structured-18"]
    task = generate(3, seed=1)[0]
    plain, reminded = harness_of(manifest, "S0-T0-O0-C0-W0-R0"), harness_of(manifest,
        "S0-T0-O0-C0-W0-R1")
    assert "each result ends with the task." in reminded.render_system()
    assert "each result ends with the task." not in plain.render_system()
    assert reminded.fresh().to_spec() == reminded.to_spec()
    assert "_query" not in json.dumps(reminded.to_spec())
    episode = run_episode(Oracle(task, reminded), reminded, task)
    tools = [m.content for m in episode.messages if m.role == "tool"]
    assert tools and all(t.endswith(f"task: {task.user_query}") for t in tools)
    assert episode.success
    assert run_episode(Oracle(task, plain), plain, task).success


def test_the_papers_space_written_out_plans_another_space_not_the_papers(tmp_path):
    """Writing the papers' space by components is a described space (its record says what
    each level is); ``space: harness`` keeps the papers' record."""
    factors = {"S": ["terse", "sectioned", "persona"], "T": ["json_call", "xml_call",
               "python_call"], "O": ["plain", "json", "markdown"],
               "C": ["full", "window", "compact"], "W": ["react", "plan_act", "act_verify"]}
    spec = _copy(tmp_path, NEW_SPACE, space={"name": "harness", "factors": factors},
                 evaluation={"in_space": 18, "out_of_space": [], "runs": 1, "tasks": 6},
                 defaults={"train": {"recipe": "structured", "runs": 18}})
    written = _plan(spec, tmp_path / "a")["structured-36"]
    papers = _plan(_copy(tmp_path, NEW_SPACE, space="harness",
                         evaluation={"in_space": 18, "out_of_space": [], "runs": 1,
                                     "tasks": 6},
                         defaults={"train": {"recipe": "structured", "runs": 18}}),
                   tmp_path / "b")["structured-36"]
    assert papers.space.components is None and written.space.components is not None
    assert written.train_harnesses == papers.train_harnesses
    assert written.eval_sets == papers.eval_sets


def test_a_named_base_harness_comes_first(tmp_path):
    space = yaml.safe_load(NEW_SPACE.read_text())["space"]
    spec = _copy(tmp_path, space={**space, "base": {"S": "steps", "T": "action_lines"}})
    manifest = _plan(spec, tmp_path / "runs")["single-harness"]
    assert manifest.space.factors["S"][0] == "steps"
    assert manifest.space.factors["T"] == ("action_lines", "json_call", "xml_call")
    harness = harness_of(manifest, manifest.train_harnesses[0])
    assert harness.realization_names()["system_prompt"] == "system_prompt/steps"


# ------------------------------------------------------------------------------ refusals


def _refused(spec: Path, *words: str) -> str:
    result = hscale("validate", spec)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def _space(**factors) -> dict:
    body = yaml.safe_load(NEW_SPACE.read_text())["space"]
    return {**body, "factors": {**body["factors"], **factors}}


@pytest.mark.parametrize("space, words", [
    ("4^1,3^4", ("space", "no realizations", "new-space.yaml")),
    (_space(S=["terse", "manuel"]), ("system_prompt/manuel", "did you mean 'system_prompt/manual'",
                                     "line of manuel")),
    (_space(Q={"component": "memory", "levels": ["a", "b"]}), ("unknown component",)),
    (_space(Q=["a", "b"]), ("factor Q", "give its component")),
    (_space(C=["full", {"realization": "window", "params": {"size": 3}}]),
     ("context/window", "size")),
    (_space(S=["terse", {"name": "mine", "text": "no tool list here"}]), ("{tools}",)),
    (_space(O=["plain", {"name": "mine", "text": "{tools}"}]), ("inline text",)),
    (_space(C=["full", "window", {"realization": "window", "params": {"k": 3}}]),
     ("two levels are named window",)),
    ({**_space(), "plugins": ["missing_plugin.py"]}, ("missing_plugin.py", "no such file")),
    ({**_space(), "base": {"S": "nope"}}, ("base", "no level 'nope'")),
])
def test_a_space_that_cannot_run_is_refused_at_validate_in_one_line(tmp_path, space, words):
    spec = _copy(tmp_path, space=space)
    lines = spec.read_text().splitlines()
    words = tuple(f":{next(i for i, x in enumerate(lines, 1) if w[8:] in x)}:"
                  if w.startswith("line of ") else w for w in words)
    _refused(spec, *words)
    assert not (tmp_path / "runs").exists()


def test_a_plugin_that_fails_to_import_is_one_line(tmp_path):
    spec = _copy(tmp_path)
    (tmp_path / PLUGIN.name).write_text("raise RuntimeError('half-written')\n")
    _refused(spec, "new_space_plugin.py", "RuntimeError", "half-written")


def test_an_eval_set_error_names_the_field_it_came_from(tmp_path):
    spec = _copy(tmp_path, evaluation={"in_space": 12, "out_of_space": [], "runs": 1})
    _refused(spec, "evaluation.in_space", "12", "divisible by 36")


def test_a_recipe_error_names_the_arm_and_its_train_options(tmp_path):
    spec = _copy(tmp_path, defaults={"train": {"recipe": "structured", "runs": 24}})
    _refused(spec, "arm structured-36", "runs=24", "divisible by 36")


def test_weights_name_a_described_spaces_own_components(tmp_path):
    """``weights`` by factor or by the component a factor sets, the plugin's kind too; the
    held-out set and adaptive K follow them."""
    spec = _copy(tmp_path, SIXTH, weights={"reminder": 3.0, "C": 2.0},
                 arms={"structured-18": {},
                       "adaptive": {"assignment": {"mode": "locality", "k": 4,
                                                   "radius": 2.0}}})
    manifest = _plan(spec, tmp_path / "runs")["adaptive"]
    weights = manifest.space.weights
    assert weights["R"] / weights["S"] == pytest.approx(3.0)
    assert weights["C"] / weights["S"] == pytest.approx(2.0)
    bad = _copy(tmp_path, SIXTH, weights={"memory": 2.0})
    _refused(bad, "memory")


def test_harness_s_siblings_come_from_the_new_space(tmp_path):
    spec = _copy(tmp_path, SIXTH, arms={"rescue": {
        "train": "single", "assignment": {"mode": "rescue", "router": "rule", "k": 1}}})
    manifest = _plan(spec, tmp_path / "runs")["rescue"]
    pool = manifest.assignment.pool
    space = factor_space(manifest)
    assert len(pool) == 17 and all(space.contains(label) for label in pool)
    assert not set(pool) & set(manifest.eval_sets["in_space"])
    assert all(harness_of(manifest, label).extras for label in pool)


def test_an_out_of_space_harness_composed_from_the_registry(tmp_path):
    manifest = _plan(_copy(tmp_path), tmp_path / "runs")["structured-36"]
    assert manifest.eval_sets["out_of_space"] == ("oos/shell", "oos/steps-shell")
    composed = harness_of(manifest, "oos/steps-shell")
    assert composed.realization_names() == {
        "system_prompt": "system_prompt/steps", "tool_interface": "tool_interface/shell",
        "observation": "observation/labelled", "context": "context/window",
        "workflow": "workflow/react"}
    assert composed.context.k == 2 and composed.name == "oos/steps-shell"
    assert manifest.space.harnesses["oos/steps-shell"]["context"] == {
        "name": "context/window", "params": {"k": 2}}


@pytest.mark.parametrize("entry, words", [
    ({"name": "oos/shell", "components": {"system_prompt": "qa"}}, ("preset already",)),
    ({"name": "oos/x", "components": {"memory": "qa"}}, ("unknown component 'memory'",)),
    ({"name": "oos/x", "components": {"system_prompt": "nope"}}, ("system_prompt/nope",)),
])
def test_a_composed_harness_that_cannot_be_built_is_refused(tmp_path, entry, words):
    body = yaml.safe_load(NEW_SPACE.read_text())["evaluation"]
    _refused(_copy(tmp_path, evaluation={**body, "out_of_space": ["oos/actions", entry]}),
             *words)


def test_evaluate_takes_a_specs_space_and_its_composed_harnesses(tmp_path):
    # internal: tests the evaluator's internals
    from hscale.train.running._evaluate import harness_sets

    spec = str(_copy(tmp_path))
    sets = harness_sets("base+in_space+out_of_space", spec)
    assert sets["base"] == ["S0-T0-O0-C0-W0"] and len(sets["in_space"]) == 36
    assert sets["out_of_space"] == ["oos/shell", "oos/steps-shell"]
    assert len(harness_sets("all", spec)["in_space"]) == 4 * 3**4 - 1
    assert harness_sets("S3-T2-O2-C1-W0,oos/steps-shell", spec) == {
        "in_space": ["S3-T2-O2-C1-W0"], "out_of_space": ["oos/steps-shell"]}
    with pytest.raises(HscaleError, match="S4"):  # S has four levels: 0..3
        harness_sets("S4-T0-O0-C0-W0", spec)


def test_a_plugin_given_as_an_importable_module(tmp_path, monkeypatch):
    """``plugins: [module.name]`` imports an installed module; its file's hash is recorded,
    without a path (it is wherever the module is installed)."""
    package = tmp_path / "site"
    package.mkdir()
    # names of its own: another module may not take over the example plugin's names
    code = PLUGIN.read_text().replace('"steps"', '"numbered"').replace("reminder", "nudge")
    (package / "my_space_plugin.py").write_text(code)
    monkeypatch.syspath_prepend(str(package))
    space = yaml.safe_load(NEW_SPACE.read_text())["space"]
    space = {**space, "plugins": ["my_space_plugin"],
             "factors": {**space["factors"], "S": ["terse", "manual", "qa", "numbered"]}}
    manifest = _plan(_copy(tmp_path, space=space, evaluation={"in_space": 36, "runs": 1}),
                     tmp_path / "runs")["structured-36"]
    [plugin] = manifest.space.plugins
    assert plugin.module == "my_space_plugin" and plugin.path is None
    assert plugin.sha256 == hashlib.sha256(code.encode()).hexdigest()
    assert harness_of(manifest, "S3-T0-O0-C0-W0").render_system().startswith("1. ")
    bad = _copy(tmp_path, space={**space, "plugins": ["no_such_plugin_module"]})
    _refused(bad, "no_such_plugin_module", "cannot import")


def test_a_realization_of_a_plugin_the_spec_does_not_list_is_refused(tmp_path):
    """A plugin loaded for another spec in the same process registered ``steps``; a spec that
    uses it without listing the plugin would run nowhere else."""
    _plan(_copy(tmp_path), tmp_path / "runs")  # loads the example plugin
    space = {**yaml.safe_load(NEW_SPACE.read_text())["space"], "plugins": []}
    _refused(_copy(tmp_path, space=space), "system_prompt/steps", "does not load",
             "space.plugins")
