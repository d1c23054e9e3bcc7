"""Harness spaces by components (hscale.harness._spaces): labels to harnesses, records that
rebuild them, added component kinds, written prompts, plugins shipped to other nodes."""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hscale.errors import HscaleError
from hscale.harness import (
    Harness,
    HarnessSpace,
    Level,
    Oracle,
    SpaceFactor,
    from_record,
    generate,
    papers_space,
    run_episode,
)

# internal: tests the built-in spaces' module
from hscale.harness import _spaces as spaces
from hscale.harness import components as registry
from hscale.harness.components import Extra, PromptParts, component_kind

# internal: a concrete system prompt (registered by name)
from hscale.harness.components._system_prompt import Text

PLUGIN = Path(__file__).resolve().parents[2] / "experiments" / "new_space_plugin.py"
CHOICES = {  # hscale's own realizations of each component
    "system_prompt": ["terse", "sectioned", "persona", "manual", "qa"],
    "tool_interface": ["json_call", "xml_call", "python_call", "shell", "action_lines"],
    "observation": ["plain", "json", "markdown", "exit_code", "labelled"],
    "context": ["full", "window", "compact"],
    "workflow": ["react", "plan_act", "act_verify"],
}
LETTERS = dict(zip(CHOICES, "STOCW", strict=True))


@st.composite
def described_spaces(draw):
    """A space over some of the five components, 2.. levels each, in any order."""
    components = draw(st.lists(st.sampled_from(list(CHOICES)), min_size=1, max_size=5,
                               unique=True))
    factors = []
    for component in components:
        names = draw(st.lists(st.sampled_from(CHOICES[component]), min_size=2,
                              max_size=len(CHOICES[component]), unique=True))
        factors.append(SpaceFactor(LETTERS[component], component,
                                   tuple(Level(n, f"{component}/{n}") for n in names)))
    return HarnessSpace("drawn", tuple(factors))


@settings(max_examples=40, deadline=None)
@given(described_spaces(), st.data())
def test_a_label_builds_its_levels_and_the_record_rebuilds_the_space(space, data):
    fs = space.factor_space
    index = data.draw(st.integers(0, fs.size - 1))
    label = fs.label(fs.from_index(index))
    harness = space.harness(label)
    chosen = dict(zip(fs.names, fs.parse_label(label).tolist(), strict=True))
    names = harness.realization_names()
    for f in space.factors:
        assert names[f.component] == f.levels[chosen[f.name]].realization
    left_out = set(CHOICES) - {f.component for f in space.factors}
    for component in left_out:  # a component outside the space keeps the base's
        assert names[component] == f"{component}/{CHOICES[component][0]}"
    again = from_record(json.loads(space.to_json()))
    assert again == space and again.harness(label).to_spec() == harness.to_spec()


def test_the_papers_space_is_recorded_by_level_names_alone():
    record = papers_space().record()
    assert set(record) == {"name", "factors"} and record["name"] == "harness"
    assert from_record(record) is papers_space()
    label = "S1-T2-O0-C1-W2"
    assert papers_space().harness(label).to_spec() == Harness.from_name(label).to_spec()


component_kind("toolset", "tool subset")


@registry.register("toolset", "no_search")
@dataclass
class NoSearch(Extra):
    """A tool subset: the episode offers every tool but search."""

    def tools(self, tools: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(t for t in tools if t != "search")


@registry.register("toolset", "all")
@dataclass
class AllTools(Extra):
    pass


def test_an_added_kind_of_component_changes_what_the_episode_offers():
    space = HarnessSpace("tools", (
        SpaceFactor("S", "system_prompt", (Level("terse", "system_prompt/terse"),
                                           Level("sectioned", "system_prompt/sectioned"))),
        SpaceFactor("X", "toolset", (Level("all", "toolset/all"),
                                     Level("no_search", "toolset/no_search")))))
    space.check()
    full, subset = space.harness("S0-X0"), space.harness("S0-X1")
    task = generate(2, seed=0)[0]
    shown = subset.fresh().start(task.user_query, task.tools)[0].content
    assert "search" in full.fresh().start(task.user_query, task.tools)[0].content
    assert "search" not in shown
    assert subset.to_spec()["extras"] == {"toolset": {"name": "toolset/no_search",
                                                      "params": {}}}
    assert Harness.from_spec(subset.to_spec()).realization_names()["toolset"] == \
        "toolset/no_search"
    assert run_episode(Oracle(task, full), full, task).success


def test_a_level_of_a_kind_that_is_no_extra_is_refused():
    space = HarnessSpace("bad", (SpaceFactor("X", "toolset", (
        Level("all", "toolset/all"), Level("terse", "system_prompt/terse"))),))
    with pytest.raises(HscaleError, match="not an Extra"):
        space.check()


def test_a_written_prompt_places_the_parts_and_drops_empty_ones():
    prompt = Text(text="rules:\n{tools}\n{observation} {context} {extra}\nend {workflow}",
                  task="do this: {query}")
    parts = PromptParts(tools="call x", workflow="answer last", observation="", context="")
    assert prompt.render(parts) == "rules:\ncall x\nend answer last"
    assert prompt.render_task("list files") == "do this: list files"
    for bad in ({"text": "no tools"}, {"text": "{tools}", "task": "no query"}):
        with pytest.raises(HscaleError):
            Text(**bad)


def test_a_plugin_travels_to_a_node_without_its_file(tmp_path, monkeypatch):
    """A cluster node that lacks the plugin's path loads the same file from the package
    the driver ships (stage_plugins), and still checks its hash."""
    here = tmp_path / "checkout"
    here.mkdir()
    shutil.copy(PLUGIN, here / PLUGIN.name)  # one module name: its registrations replace
    plugin = spaces.plugin_of(PLUGIN.name, here)
    staged = spaces.stage_plugins()
    assert staged is not None and (staged / f"p{plugin.sha256}.py").is_file()
    node = tmp_path / "node"
    shutil.copytree(staged, node / spaces.SHIPPED)
    (here / PLUGIN.name).unlink()
    monkeypatch.setattr(spaces, "_LOADED", {})
    monkeypatch.syspath_prepend(str(node))
    sys.modules.pop(spaces.SHIPPED, None)
    spaces.load_plugin(plugin)
    assert spaces._LOADED[plugin.module][1].parent == node / spaces.SHIPPED
    (node / spaces.SHIPPED / f"p{plugin.sha256}.py").write_text("# not the planned code\n")
    monkeypatch.setattr(spaces, "_LOADED", {})
    with pytest.raises(HscaleError, match="changed after planning"):
        spaces.load_plugin(plugin)
    with pytest.raises(HscaleError, match="no such file"):  # a node with neither
        spaces.load_plugin(spaces.Plugin(plugin.module, "0" * 64, plugin.path))
