"""Components: registry, tool-interface round trips and errors, observations, context, workflow."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hscale.errors import HscaleError
from hscale.harness import Message, ParseError, ToolCall, ToolResult
from hscale.harness import components as registry

# internal: tests against the canonical tool tables
from hscale.harness._types import BUILTIN_TOOLS, CANONICAL_TOOLS, OPTIONAL_ARGS
from hscale.harness.components import Kind, Observation

# internal: concrete context components (registered by name)
from hscale.harness.components._context import Compact, Full, Window, summarize

# internal: concrete tool parsers (registered by name)
from hscale.harness.components._tool_interface import JsonCall, PythonCall, XmlCall

# internal: concrete workflows (registered by name)
from hscale.harness.components._workflow import ActVerify, PlanAct, React
from tests.harness.helpers import out_of_vocabulary

IN_SPACE_T = ("tool_interface/json_call", "tool_interface/xml_call", "tool_interface/python_call")
ALL_T = (*IN_SPACE_T, "tool_interface/shell", "tool_interface/action_lines")
ALL_O = ("observation/plain", "observation/json", "observation/markdown",
         "observation/exit_code", "observation/labelled")

# Pieces of text a model could write: words, and the punctuation every syntax must escape.
PIECES = ["a", "txt", "7", "sum", "read_file", "tool_call", "action", "fetch", "open", "eof",
          "'", '"', "\\", "<", ">", "/", "&", "(", ")", "{", "}", ":", ",", "$", "|", "=", ".",
          "#", "`", "&quot;", "\t", "\n", "\n$ ", "\naction: ", "</tool_call>", "</save>"]


def texts(single_line: bool = False) -> st.SearchStrategy[str]:
    pieces = [p for p in PIECES if "\n" not in p] if single_line else PIECES
    return st.lists(st.tuples(st.sampled_from(pieces), st.sampled_from(["", " ", "  "])),
                    max_size=8).map(lambda xs: "".join(p + s for p, s in xs))


@st.composite
def canonical_calls(draw) -> ToolCall:
    name = draw(st.sampled_from(sorted(CANONICAL_TOOLS)))
    args = {}
    for arg in CANONICAL_TOOLS[name]:
        # Only the last argument of a call may span lines (the action-line protocol's rule).
        last = arg == CANONICAL_TOOLS[name][-1]
        args[arg] = draw(texts(single_line=not last))
    if name in OPTIONAL_ARGS and draw(st.booleans()):  # a read window's start, sometimes
        args["offset"] = str(draw(st.integers(0, 10**6)))
    return ToolCall(name, args)


SAMPLE_CALLS = [
    ToolCall("list"),
    ToolCall("read", {"path": "a.txt"}),
    ToolCall("write", {"path": "a.txt", "text": 'say "hi", it\'s 7 < 8 & more\nline two'}),
    ToolCall("search", {"word": "sum"}),
    ToolCall("calc", {"expr": "7 + 3 * 2"}),
]
# the shell tool, which only the real task sets' interfaces show
ALL_CALLS = [*SAMPLE_CALLS,
             ToolCall("run", {"command": "python3 check.py --out 'a b.txt' && echo \"ok\""}),
             ToolCall("read", {"path": "notes/long file.md", "offset": "16000"})]


# --- registry ---------------------------------------------------------------------------------
def test_registry_lists_and_builds_builtins():
    assert {"system_prompt/terse", "system_prompt/sectioned", "system_prompt/persona"} <= set(
        registry.available("system_prompt"))
    assert set(IN_SPACE_T) <= set(registry.available("tool_interface"))
    assert all(n.startswith("context/") for n in registry.available("context"))
    window = registry.get("context/window", k=3)
    assert isinstance(window, Window) and window.k == 3
    assert registry.spec_of(window) == {"name": "context/window", "params": {"k": 3}}
    assert registry.from_spec(registry.spec_of(window)) == window
    assert registry.from_spec("workflow/react") == React()


@pytest.mark.parametrize(("typo", "suggestion"), [
    ("context/windw", "context/window"),
    ("tool_interface/json", "tool_interface/json_call"),
    ("window", "context/window"),
])
def test_registry_did_you_mean(typo, suggestion):
    with pytest.raises(HscaleError) as info:
        registry.get(typo)
    assert f"did you mean {suggestion!r}" in info.value.hint
    assert "available:" in info.value.hint


def test_registry_bad_params_and_names():
    with pytest.raises(HscaleError, match="cannot build"):
        registry.get("context/window", width=3)
    with pytest.raises(HscaleError, match="at least 1"):
        registry.get("context/window", k=0)
    with pytest.raises(HscaleError, match="bad realization name"):
        registry.register("Context", "Big Window")
    with pytest.raises(HscaleError, match="not a registered"):
        registry.name_of(object())


def test_users_register_their_own():
    @dataclass(frozen=True)
    class Shout(Observation):
        def describe(self) -> str:
            return "RESULTS"

        def render(self, result: ToolResult) -> str:
            return result.output.upper()

        def parse(self, text: str) -> ToolResult:
            return ToolResult(True, text.lower())

    try:
        registry.register("observation", "shout")(Shout)
        assert "observation/shout" in registry.available("observation")
        assert registry.get("observation/shout").render(ToolResult(True, "hi")) == "HI"
        assert registry.name_of(Shout()) == "observation/shout"

        class Other(Shout):
            pass

        with pytest.raises(HscaleError, match="already registered"):
            registry.register("observation", "shout")(Other)
        registry.register("observation", "shout", replace=True)(Other)
        assert isinstance(registry.get("observation/shout"), Other)
    finally:
        registry.unregister("observation/shout")
    assert "observation/shout" not in registry.available()


# --- tool interfaces --------------------------------------------------------------------------
@pytest.mark.parametrize("name", ALL_T)
@settings(max_examples=150, deadline=None)
@given(call=canonical_calls())
def test_round_trip(name, call):
    interface = registry.get(name).only(tuple(CANONICAL_TOOLS), optional=True)
    assert interface.parse(interface.format_call(call)) == call


@pytest.mark.parametrize("name", ALL_T)
@settings(max_examples=150, deadline=None)
@given(text=st.one_of(st.text(max_size=60), texts()))
def test_parse_never_raises(name, text):
    out = registry.get(name).parse(text)
    assert out is None or isinstance(out, ParseError | ToolCall)


@pytest.mark.parametrize("name", ALL_T)
def test_round_trip_samples_and_thought_before_call(name):
    interface = registry.get(name).only(tuple(CANONICAL_TOOLS), optional=True)
    for call in ALL_CALLS:
        assert interface.parse("i will do it now.\n" + interface.format_call(call)) == call


@pytest.mark.parametrize("name", ALL_T)
def test_a_tool_the_task_does_not_have_is_an_unknown_tool(name):
    """The built-in world's interfaces neither show nor parse ``run``; a task's tools do."""
    base, full = registry.get(name), registry.get(name).only(tuple(CANONICAL_TOOLS))
    run = ToolCall("run", {"command": "ls -l"})
    assert base.enabled == BUILTIN_TOOLS and full.enabled == tuple(CANONICAL_TOOLS)
    shown = re.compile(rf"(?<![\w-]){re.escape(full.spec('run').name)}(?![\w-])")
    assert shown.search(full.describe()) and not shown.search(base.describe())
    assert isinstance(base.parse(full.format_call(run)), ParseError)
    assert full.parse(full.format_call(run)) == run
    window = ToolCall("read", {"path": "a.txt", "offset": "400"})
    offsets = base.only(BUILTIN_TOOLS, optional=True)  # read windows come with the real formats
    assert isinstance(base.parse(offsets.format_call(window)), ParseError)
    assert offsets.parse(offsets.format_call(window)) == window
    assert offsets.describe() != base.describe()
    assert base.only(BUILTIN_TOOLS).describe() == base.describe()


@pytest.mark.parametrize("name", ALL_T)
@pytest.mark.parametrize("answer", ["10", "the sum is 10.", "done, a.txt has 7 in it", ""])
def test_plain_text_is_a_final_answer(name, answer):
    assert registry.get(name).parse(answer) is None


@pytest.mark.parametrize(("a", "b"), list(itertools.permutations(ALL_T, 2)))
def test_another_interfaces_syntax_is_an_error(a, b):
    every = tuple(CANONICAL_TOOLS)
    writer, reader = registry.get(a).only(every, True), registry.get(b).only(every, True)
    for call in ALL_CALLS:
        assert isinstance(reader.parse(writer.format_call(call)), ParseError), (a, b, call)


MALFORMED = {
    "tool_interface/json_call": [
        '<tool_call> {"name": "read_file", "arguments": {"path": </tool_call>',
        '<tool_call> {"name": "read_file", "arguments": {"path": "a.txt"}}',
        '{"name": "read_file", "arguments": {"path": "a.txt"}} </tool_call>',
        '<tool_call> {"name": "open_file", "arguments": {"path": "a.txt"}} </tool_call>',
        '<tool_call> {"name": "read_file", "arguments": {"file": "a.txt"}} </tool_call>',
        '<tool_call> {"name": "read_file", "arguments": {"path": 7}} </tool_call>',
        '<tool_call> ["read_file"] </tool_call>',
        '<tool_call> {"name": "list_files"}}} </tool_call>',
        '<tool_call> {"name": "list_files"} </tool_call> <tool_call> {"name": "list_files"} '
        "</tool_call>",
    ],
    "tool_interface/xml_call": [
        '<open path="a.txt"/>', '<open file="a.txt">', '<save file="a.txt">7',
        '<save file="a.txt"/>', "<open file=a.txt/>", '<read_file path="a.txt"/>',
        '<open file="a.txt" file="b"/>', '<ls/><ls/>', '<save file="a"><b>7</b></save>',
        "</open>", "<ls>junk</ls>",
    ],
    "tool_interface/python_call": [
        'fetch("a.txt")', "fetch(name=a)", 'fetch(name="a.txt"', 'fetch(path="a.txt")',
        'read_file(path="a.txt")', "fetch(**args)", 'listdir() listdir()', "fetch(name=7)",
        'os.fetch(name="a")', 'fetch(name="a\nb")', "fetch(name='a",
    ],
    "tool_interface/shell": [
        "$ cat", "$ cat a.txt b.txt", "$ rm a.txt", "$ cat 'a.txt", "$ ls\n$ ls",
        "$ echo 7 >", "$ ", '$ echo "7',
    ],
    "tool_interface/action_lines": [
        "action: open\nfile: a.txt", "action: show\npath: a.txt", "action: show",
        "action: put\nbody: 7", "action: dir\nfile: a.txt", "action: dir\naction: dir",
    ],
}


@pytest.mark.parametrize(("name", "text"), [(n, t) for n, ts in MALFORMED.items() for t in ts])
def test_malformed_calls_are_parse_errors(name, text):
    out = registry.get(name).parse(text)
    assert isinstance(out, ParseError), out
    assert out.message and len(out.message.split()) <= 8


def test_parse_error_messages():
    assert JsonCall().parse('<tool_call> {"name": "nope"} </tool_call>') == ParseError(
        "unknown tool nope")
    assert JsonCall().parse(
        '<tool_call> {"name": "read_file", "arguments": {}} </tool_call>'
    ) == ParseError("read_file needs path")
    assert XmlCall().parse('<save file="a.txt">7') == ParseError("missing </save>")
    assert PythonCall().parse('fetch("a.txt")') == ParseError("use keyword args")
    assert PythonCall().parse('<open file="a.txt"/>') == ParseError("wrong call syntax")


def test_interfaces_differ_in_names_args_and_syntax():
    interfaces = [registry.get(n) for n in IN_SPACE_T]
    names = [{s.name for s in i.TOOLS} for i in interfaces]
    for x, y in itertools.combinations(names, 2):
        assert not x & y
    args = [tuple(s.own_args for s in i.TOOLS) for i in interfaces]
    assert len(set(args)) == 3
    for i in interfaces:
        text = i.describe()
        assert all(s.name in text for s in i.TOOLS)
        assert out_of_vocabulary(text) == []
        for call in SAMPLE_CALLS[:2] + SAMPLE_CALLS[3:]:
            assert out_of_vocabulary(i.format_call(call)) == []


def test_format_call_rejects_non_canonical_calls():
    for bad in [ToolCall("delete", {"path": "a"}), ToolCall("read", {"file": "a"}),
                ToolCall("read")]:
        with pytest.raises(HscaleError):
            JsonCall().format_call(bad)


def test_rendered_examples():
    call = ToolCall("read", {"path": "a.txt"})
    assert JsonCall().format_call(call) == (
        '<tool_call> {"name": "read_file", "arguments": {"path": "a.txt"}} </tool_call>')
    assert XmlCall().format_call(call) == '<open file="a.txt"/>'
    assert PythonCall().format_call(call) == 'fetch(name="a.txt")'
    write = ToolCall("write", {"path": "a.txt", "text": "7"})
    assert XmlCall().format_call(write) == '<save file="a.txt">7</save>'
    assert PythonCall().format_call(write) == 'store(name="a.txt", data="7")'


# --- observations -----------------------------------------------------------------------------
result_texts = st.lists(st.sampled_from(["7", "a.txt", "sum", ":", '"', "\n", " ", "```", "#"]),
                        max_size=6).map("".join)


@pytest.mark.parametrize("name", ALL_O)
@settings(max_examples=120, deadline=None)
@given(ok=st.booleans(), text=result_texts, truncated=st.booleans())
def test_observation_round_trip(name, ok, text, truncated):
    obs = registry.get(name)
    if name == "observation/plain" and text.startswith("error: "):
        return
    result = ToolResult(ok=ok, output=text if ok else "", error="" if ok else text,
                        truncated=truncated and ok)
    back = obs.parse(obs.render(result))
    assert (back.ok, back.output, back.error) == (result.ok, result.output, result.error)
    if name != "observation/plain":
        assert back.truncated == result.truncated


def test_observation_formats():
    ok, err = ToolResult(True, "7"), ToolResult(False, error="no such file")
    cut = ToolResult(True, "7 8", truncated=True)
    plain, js, md = (registry.get(f"observation/{n}") for n in ("plain", "json", "markdown"))
    assert plain.render(ok) == "7" and plain.render(err) == "error: no such file"
    assert plain.render(cut) == "7 8"
    assert js.render(ok) == '{"status": "ok", "output": "7"}'
    assert js.render(err) == '{"status": "error", "message": "no such file"}'
    assert js.render(cut) == '{"status": "ok", "output": "7 8", "truncated": true}'
    assert js.render(ToolResult(True, "a\nb")) == '{"status": "ok", "output": ["a", "b"]}'
    assert md.render(ok) == "### result\n```\n7\n```"
    assert md.render(cut) == "### result\n```\n7 8\n```\n[output cut]"
    assert md.render(err) == "### error\nno such file"
    for o in (plain, js, md):
        for r in (ok, cut):
            assert out_of_vocabulary(o.render(r)) == []
    with pytest.raises(HscaleError):
        js.parse("not json")


# --- context ----------------------------------------------------------------------------------
def _history(turns: int) -> list[Message]:
    """System, task, then ``turns`` pairs of (tool call, result) in the JSON interface."""
    ti = JsonCall()
    out = [Message("system", "sys"), Message("user", "task")]
    for i in range(turns):
        out.append(Message("assistant", ti.format_call(ToolCall("read", {"path": f"f{i}"}))))
        out.append(Message("tool", f"out{i}"))
    return out


def _drive(context, turns: int):
    """Call ``view`` before each of ``turns`` + 1 model calls, as the loop does."""
    full = _history(turns) + [Message("assistant", "done")]
    context.start()
    views = [context.view(full[: 2 + 2 * i], JsonCall().parse) for i in range(turns + 1)]
    return full, views


def _each_reply_trained_once(context, full):
    counts = [0] * len(full)
    for seg in context.closed(full):
        msgs, mask = seg.messages(full), seg.trainable(full)
        assert len(msgs) == len(mask)
        assert msgs[: len(seg.prefix)] == list(seg.prefix)
        for j, flag in enumerate(mask[len(seg.prefix):]):
            counts[seg.start + j] += flag
    assert counts == [int(m.role == "assistant") for m in full]


def test_full_context_is_one_segment():
    ctx = Full()
    full, views = _drive(ctx, 4)
    assert views[-1] == full[:-1]
    assert len(ctx.segments) == 1
    assert ctx.segment_messages(full) == [full]
    _each_reply_trained_once(ctx, full)


def test_window_keeps_head_and_last_k_turns():
    ctx = Window(k=2)
    full, views = _drive(ctx, 4)
    assert views[2] == full[:6]  # two turns: nothing dropped yet
    assert views[3] == full[:2] + full[4:8]
    assert views[4] == full[:2] + full[6:10]
    assert [len(v) for v in views] == [2, 4, 6, 6, 6]
    assert len(ctx.segments) == 3  # calls 0-2 share a prefix; 3 and 4 each slide
    _each_reply_trained_once(ctx, full)


def test_compaction_summarises_and_starts_segments():
    ctx = Compact(max_turns=2, keep=1)
    full, views = _drive(ctx, 5)
    summary = Message("user", "summary: you read f0, you read f1.")
    assert views[2] == full[:6]
    assert views[3] == full[:2] + [summary] + full[6:8]
    assert views[4] == full[:2] + [summary] + full[6:10]
    assert views[5] == full[:2] + [Message("user", "summary: you read f0, you read f1, you read "
                                           "f2, you read f3.")] + full[10:12]
    assert len(ctx.segments) == 3
    segs = ctx.segment_messages(full)
    assert segs[0] == full[:7] and segs[1][2] == summary and segs[2][-1].content == "done"
    _each_reply_trained_once(ctx, full)
    # A fresh episode resets the state.
    _, again = _drive(ctx, 1)
    assert len(ctx.segments) == 1 and again[-1] == full[:4]


def test_summary_phrases_and_validation():
    ti = JsonCall()
    turns = [Message("assistant", ti.format_call(c)) for c in SAMPLE_CALLS] + [
        Message("assistant", "<tool_call> nope"), Message("assistant", "a plan")]
    text = summarize(turns, ti.parse)
    assert text == ("summary: you listed the files, you read a.txt, you wrote a.txt, "
                    "you searched sum, you computed 7 + 3 * 2, you made a bad call, you replied.")
    assert out_of_vocabulary(text) == []
    assert summarize(turns[:2]) == "summary: you took a turn, you took a turn."
    with pytest.raises(HscaleError):
        Compact(max_turns=2, keep=2)


def test_context_descriptions_differ():
    texts_ = {c.describe() for c in (Full(), Window(), Compact())}
    assert len(texts_) == 3 and "2" in Window().describe()


# --- workflows --------------------------------------------------------------------------------
CALL = ToolCall("read", {"path": "a.txt"})


def test_react():
    wf = React()
    wf.start([])
    assert wf.after_assistant(0, CALL, "x").kind is Kind.CONTINUE
    assert wf.after_assistant(1, ParseError("bad"), "x").reason == "error"
    end = wf.after_assistant(2, None, "10")
    assert (end.kind, end.text) == (Kind.FINISH, "10")


def test_plan_act():
    wf = PlanAct()
    msgs = [Message("system", "s")]
    assert wf.start(msgs) == msgs
    first = wf.after_assistant(0, CALL, "x")
    assert (first.kind, first.reason) == (Kind.INJECT, "no_plan")
    plan = wf.after_assistant(1, None, "read a.txt, then answer.")
    assert (plan.kind, plan.text, plan.reason) == (Kind.INJECT, "now act.", "plan")
    assert wf.after_assistant(2, CALL, "x").kind is Kind.CONTINUE
    assert wf.after_assistant(3, None, "10").kind is Kind.FINISH
    wf.start([])
    assert wf.after_assistant(0, None, "plan").kind is Kind.INJECT


def test_act_verify():
    wf = ActVerify()
    wf.start([])
    assert wf.after_assistant(0, CALL, "x").kind is Kind.CONTINUE
    ask = wf.after_assistant(1, None, "10")
    assert (ask.kind, ask.reason) == (Kind.INJECT, "verify")
    assert wf.after_assistant(2, CALL, "x").kind is Kind.CONTINUE
    assert wf.after_assistant(3, None, "10").kind is Kind.FINISH
    wf.start([])
    assert wf.after_assistant(0, None, "10").kind is Kind.INJECT


def test_workflow_instructions_are_distinct_and_in_vocabulary():
    texts_ = [w.instructions() for w in (React(), PlanAct(), ActVerify())]
    assert len(set(texts_)) == 3
    assert all(out_of_vocabulary(t) == [] for t in texts_)
