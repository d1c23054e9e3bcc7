"""Harness: labels, specs, out-of-space presets, sample episodes under all 243, golden texts.

Set HSCALE_UPDATE_GOLDEN=1 to rewrite tests/harness/golden/*.txt after an intended change.
"""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path

import pytest

from hscale.design import Factor, FactorSpace
from hscale.errors import HscaleError
from hscale.harness import (
    OUT_OF_SPACE,
    Harness,
    Message,
    ParseError,
    ToolCall,
    ToolResult,
    factor_space,
)

# internal: uses the built-in world's vocabulary
from hscale.harness._vocab import tokenize
from hscale.harness.components import Kind

# internal: concrete context components (registered by name)
from hscale.harness.components._context import Window
from tests.harness.helpers import out_of_vocabulary

GOLDEN = Path(__file__).parent / "golden"
SPACE = factor_space()
LABELS = SPACE.labels(SPACE.all_configs())
BUDGET = 256

QUERY = "read a.txt, then write the sum with 3 to a.txt."
READ = ToolCall("read", {"path": "a.txt"})
WRITE = ToolCall("write", {"path": "a.txt", "text": "10"})
RESULTS = {"read": ToolResult(True, "7"), "write": ToolResult(True, "wrote a.txt")}
# Four assistant turns per workflow: two tool calls, a final answer and the workflow's own
# turn (react: a malformed call, answered by an error observation, then redone correctly).
SCRIPTS = {
    "workflow/react": [READ, "<tool_call> {", WRITE, "10"],
    "workflow/plan_act": ["read a.txt, then write the sum.", READ, WRITE, "10"],
    "workflow/act_verify": [READ, WRITE, "10", "10"],
}


def run_sample(h: Harness) -> tuple[list[Message], list[list[Message]]]:
    """A scripted 4-turn episode with canned tool results: (history, what each call saw)."""
    history = h.start(QUERY)
    views = []
    script = SCRIPTS[h.realization_names()["workflow"]]
    for turn, step in enumerate(script):
        views.append(h.view(history))
        text = h.format_call(step) if isinstance(step, ToolCall) else step
        history.append(Message("assistant", text))
        parsed = h.parse(text)
        if isinstance(step, ToolCall):
            assert parsed == step
        action = h.after_assistant(turn, parsed, text)
        if action.kind is Kind.FINISH:
            assert turn == len(script) - 1
            return history, views
        if action.kind is Kind.INJECT:
            history.append(Message("user", action.text))
        elif isinstance(parsed, ToolCall):
            history.append(h.observe(RESULTS[parsed.name]))
        elif isinstance(parsed, ParseError):
            history.append(h.observe(parsed))
    raise AssertionError("the script did not finish the episode")


def n_tokens(messages: list[Message]) -> int:
    return sum(len(tokenize(m.content)) for m in messages)


def transcript(h: Harness) -> str:
    history, views = run_sample(h)
    lines = [f"# {h.name}"]
    lines += [f"[{m.role}]\n{m.content}" for m in history]
    lines.append("# last view")
    lines += [f"[{m.role}]\n{m.content}" for m in views[-1]]
    return "\n".join(lines) + "\n"


# --- construction -----------------------------------------------------------------------------
def test_from_label_uses_level_names():
    h = Harness.from_label("S0-T1-O2-C0-W1")
    assert h.name == "S0-T1-O2-C0-W1"
    assert h.realization_names() == {
        "system_prompt": "system_prompt/terse", "tool_interface": "tool_interface/xml_call",
        "observation": "observation/markdown", "context": "context/full",
        "workflow": "workflow/plan_act",
    }


def test_from_label_errors():
    with pytest.raises(HscaleError):
        Harness.from_label("S3-T0-O0-C0-W0")
    odd = FactorSpace((Factor("S", ("terse", "loud")), Factor("T", ("json_call", "xml_call"))))
    with pytest.raises(HscaleError, match="unknown realization 'system_prompt/loud'") as info:
        Harness.from_label("S1-T0", odd)
    assert "system_prompt/terse" in info.value.hint
    two = FactorSpace((Factor("S", ("terse", "persona")), Factor("T", ("json_call", "xml_call"))))
    h = Harness.from_label("S1-T1", two)
    assert h.realization_names()["workflow"] == "workflow/react"  # base for missing factors
    bad = FactorSpace((Factor("X", ("a", "b")),))
    with pytest.raises(HscaleError, match="sets no harness component"):
        Harness.from_label("X0", bad)


def test_from_names_and_specs():
    h = Harness.from_names({"context": {"name": "window", "params": {"k": 3}},
                            "tool_interface": "tool_interface/python_call"}, name="mine")
    assert isinstance(h.context, Window) and h.context.k == 3
    spec = h.to_spec()
    assert json.loads(json.dumps(spec)) == spec
    assert spec["components"]["context"] == {"name": "context/window", "params": {"k": 3}}
    again = Harness.from_spec(spec)
    assert again.to_spec() == spec and again.render_system() == h.render_system()
    assert h.fresh() is not h and h.fresh().to_spec() == spec
    with pytest.raises(HscaleError, match="unknown components"):
        Harness.from_names({"memory": "full"})
    with pytest.raises(HscaleError) as info:
        Harness.from_names({"workflow": "plan_acts"})
    assert "did you mean 'workflow/plan_act'" in info.value.hint


def test_out_of_space_presets():
    assert set(OUT_OF_SPACE) == {"oos/shell", "oos/actions"}
    for name in OUT_OF_SPACE:
        h = Harness.from_name(name)
        assert h.name == name
        assert Harness.from_spec(h.to_spec()).render_system() == h.render_system()
    with pytest.raises(HscaleError) as info:
        Harness.from_name("oos/shel")
    assert "did you mean 'oos/shell'" in info.value.hint
    assert Harness.from_name("S0-T0-O0-C0-W0").name == "S0-T0-O0-C0-W0"


# --- the 243 ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def in_space() -> dict[str, Harness]:
    return {label: Harness.from_label(label) for label in LABELS}


def test_all_243_system_prompts_are_distinct(in_space):
    prompts = [h.render_system() for h in in_space.values()]
    assert len(prompts) == 243 and len(set(prompts)) == 243


def test_sample_episodes_fit_budget_and_vocabulary(in_space):
    worst = 0
    for label, h in in_space.items():
        history, views = run_sample(h)
        assert sum(m.role == "assistant" for m in history) == 4
        total = n_tokens(history)
        worst = max(worst, total)
        assert total <= BUDGET, (label, total)
        assert all(n_tokens(v) <= BUDGET for v in views)
        oov = {t for m in history + [m for v in views for m in v]
               for t in out_of_vocabulary(m.content)}
        assert not oov, (label, oov)
    assert worst > 150  # the budget is actually exercised


def test_context_changes_what_the_model_sees(in_space):
    seen = {}
    for c in range(3):
        h = in_space[f"S0-T0-O0-C{c}-W2"]
        _, views = run_sample(h)
        seen[c] = views[-1]
        assert len(h.context.segments) == (1 if c == 0 else 2)
    assert seen[0] != seen[1] != seen[2] != seen[0]
    assert any(m.content.startswith("summary:") for m in seen[2])


def test_out_of_space_differs_in_tool_syntax(in_space):
    calls = [ToolCall("list"), READ, WRITE, ToolCall("search", {"word": "sum"}),
             ToolCall("calc", {"expr": "7 + 3"})]
    tis = {h.realization_names()["tool_interface"]: h.tool_interface for h in in_space.values()}
    prompts = {h.render_system() for h in in_space.values()}
    for name in OUT_OF_SPACE:
        oos = Harness.from_name(name)
        assert oos.render_system() not in prompts
        for ti in tis.values():
            for call in calls:
                assert oos.format_call(call) != ti.format_call(call)
                assert isinstance(ti.parse(oos.format_call(call)), ParseError)
                assert isinstance(oos.parse(ti.format_call(call)), ParseError)
        history, _ = run_sample(oos)
        assert n_tokens(history) <= BUDGET
        assert not [t for m in history for t in out_of_vocabulary(m.content)]


# --- golden texts -----------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["S0-T0-O0-C0-W0", "S1-T1-O1-C1-W1", "S2-T2-O2-C2-W2",
                                  "oos/shell"])
def test_golden(name):
    text = transcript(Harness.from_name(name))
    path = GOLDEN / f"{name.replace('/', '_')}.txt"
    if os.environ.get("HSCALE_UPDATE_GOLDEN"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")
    assert transcript(Harness.from_name(name)) == text  # deterministic


def test_rendering_is_pure():
    h = Harness.from_label("S1-T2-O0-C2-W1")
    assert h.initial_messages(QUERY) == h.initial_messages(QUERY)
    a, _ = run_sample(h)
    b, _ = run_sample(h)  # start() resets context and workflow state
    assert a == b
    for x, y in itertools.combinations(["S0", "S1", "S2"], 2):
        hx, hy = (Harness.from_label(f"{s}-T0-O0-C0-W0") for s in (x, y))
        assert hx.initial_messages(QUERY) != hy.initial_messages(QUERY)
