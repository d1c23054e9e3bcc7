"""Hostile inputs on the surfaces a user reaches past the papers' space: a spec's ``space:``
(components, levels, plugins, base), its black-box and rescue arms (teacher, pool files),
and the pool files themselves. Each key of a valid spec is mutated in turn (removed, nulled,
retyped, emptied, given non-ASCII or path-like text); every case must end in exit 0, or in
exit 2 with one ``error:`` line that names the key that was changed (or the key holding
it), never a traceback, a hang or a silent success of a broken input. Plugins that loop,
sleep, end the process or raise at import are refused within the bound the line states.
"""

from __future__ import annotations

import copy
import json
import os
import re
from typing import Any

import pytest
import yaml

from tests.cli import hscale
from tests.test_fuzz import assert_clean, cli

SPACE = {
    "name": "fz",
    "factors": {
        "S": ["terse", "manual", {"name": "brief", "text": "tasks.\n{tools}"}],
        "T": {"component": "tool_interface", "levels": ["json_call", "xml_call"]},
        "C": ["full", {"realization": "window", "params": {"k": 3}, "name": "window3"}],
    },
    "base": {"S": "manual"},
}
SPEC = {
    "name": "fz", "model": "hscale-tiny", "steps": 2, "seeds": [0],
    "benchmark": {"name": "builtin", "tasks": 12, "seed": 0},
    "evaluation": {"in_space": 0, "tasks": 2, "episodes": 2, "runs": 1},
    "space": SPACE,
    "arms": {
        "single": {"train": {"recipe": "single"}, "assignment": {"mode": "repeat", "k": 1}},
        "rescue": {"train": {"recipe": "single"},
                   "assignment": {"mode": "rescue", "router": "rule", "k": 1,
                                  "pool": ["C0-S1-T1"]}},
        "sft": {"blackbox": {"harness": "bb/claude-code", "method": "sft",
                             "teacher": "scripted", "episodes": 4}},
    },
}
VALUES: dict[str, Any] = {
    "null": None, "zero": 0, "negative": -1, "float": 1.5, "true": True, "empty": "",
    "sigma": "Σ", "path": "../../x", "list": [], "dict": {}, "nested": [None],
    "junk-key": {"zz": 1}, "long": "x" * 5_000,
}


def _paths(node: Any, at: tuple = ()) -> list[tuple]:
    """Every key and list position under ``node``."""
    out = []
    items = node.items() if isinstance(node, dict) else enumerate(node) \
        if isinstance(node, list) else ()
    for key, value in items:
        out.append((*at, key))
        out += _paths(value, (*at, key))
    return out


def _mutated(spec: dict, path: tuple, value: Any) -> dict:
    out = copy.deepcopy(spec)
    node = out
    for key in path[:-1]:
        node = node[key]
    if value is _DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return out


_DELETE = object()
ROOTS = [("space",), ("arms", "rescue", "assignment"), ("arms", "sft", "blackbox")]


def _get(node: Any, path: tuple) -> Any:
    for key in path:
        node = node[key]
    return node


def _cases() -> list[tuple[tuple, str]]:
    out = []
    for root in ROOTS:
        for path in [root, *_paths(_get(SPEC, root), root)]:
            out += [(path, name) for name in ["delete", *VALUES]]
    return out


CASES = _cases()


def _sampled(cases: list, ids: list[str], every: int = 4) -> list:
    """Every case; all but every ``every``-th one run with the slow tests (``-m slow``)."""
    return [pytest.param(*case, id=name, marks=() if i % every == 0 else pytest.mark.slow)
            for i, (case, name) in enumerate(zip(cases, ids, strict=True))]


def _names_the_key(line: str, path: tuple) -> bool:
    """The line names the changed key, or one that holds it (a list of levels, a factor)."""
    dotted = [".".join(str(p) for p in path[:n]) for n in range(len(path), 0, -1)]
    return any(d in line for d in dotted[:3]) or any(
        re.search(rf"\b{re.escape(key)}\b", line) for key in path[-2:] if isinstance(key, str))


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("surfaces")


def test_the_unmutated_spec_is_valid(folder):
    path = folder / "valid.yaml"
    path.write_text(yaml.safe_dump(SPEC, allow_unicode=True))
    code, err = cli("validate", str(path))
    assert code == 0, err


@pytest.mark.parametrize(("path", "mutation"), _sampled(
    CASES, [".".join(map(str, p)) + f"={m}" for p, m in CASES]))
def test_a_mutated_key_is_refused_in_one_line_naming_it(folder, path, mutation):
    spec = _mutated(SPEC, path, _DELETE if mutation == "delete" else VALUES[mutation])
    file = folder / f"case-{abs(hash((path, mutation)))}.yaml"
    file.write_text(yaml.safe_dump(spec, allow_unicode=True))
    code, err = cli("validate", str(file))
    assert_clean(code, err)
    if code == 2:
        line = err.strip().splitlines()[-1]
        assert str(file.name) in line, line  # the file the user wrote
        assert _names_the_key(line, path), line


# ------------------------------------------------------------------------------- plugins

PLUGINS = {
    "loops": "while True:\n    pass\n",
    "sleeps": "import time\ntime.sleep(10**6)\n",
    "exits-0": "import sys\nsys.exit(0)\n",
    "os-exits-0": "import os\nos._exit(0)\n",
    "exits-3": "import sys\nsys.exit(3)\n",
    "builtin-exit": "exit()\n",
    "ctrl-c": "raise KeyboardInterrupt\n",
    "raises": "raise ValueError('bad config')\n",
    "syntax": "def broken(:\n",
    "imports-nothing": "import no_such_module_here\n",
    "crashes-python": "import ctypes\nctypes.string_at(0)\n",
    "kind-clash": "from hscale.harness.components import component_kind\n"
                  "component_kind('notes')\n",
    "bad-kind": "from hscale.harness.components import component_kind\n"
                "component_kind('Bad Kind')\n",
    "takes-builtin": "from hscale.harness.components import register\n"
                     "@register('system_prompt', 'terse')\nclass Mine:\n    pass\n",
}
BOUND = 2  # HSCALE_PLUGIN_SECONDS for these cases


@pytest.mark.parametrize("kind", PLUGINS)
def test_a_misbehaving_plugin_is_refused_within_the_bound_and_never_exits_0(tmp_path, kind):
    import subprocess
    import sys
    import time

    (tmp_path / f"{kind}.py").write_text(PLUGINS[kind])
    spec = _mutated(SPEC, ("space", "plugins"), [f"{kind}.py"])
    file = tmp_path / "spec.yaml"
    file.write_text(yaml.safe_dump(spec))
    began = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "hscale.cli", "validate", str(file)],
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "HSCALE_PLUGIN_SECONDS": str(BOUND)})
    assert time.monotonic() - began < BOUND + 30
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert_clean(done.returncode, done.stderr)
    line = done.stderr.strip().splitlines()[-1]
    assert f"{kind}.py" in line and "spec.yaml" in line, line


# ------------------------------------------------------------------------------- pools

PAPERS_SPEC = {k: v for k, v in SPEC.items() if k != "space"}


@pytest.fixture(scope="module")
def pool_file(tmp_path_factory):
    """A frozen pool evolved from the papers' base harness by a scripted editor."""
    from tests.train.test_evolve import REPLIES

    folder = tmp_path_factory.mktemp("pool")
    (folder / "replies.yaml").write_text(yaml.safe_dump(REPLIES[:3]))
    done = hscale("harness", "evolve", "--editor", folder / "replies.yaml", "--out",
                  folder / "pool.json", "--rounds", "3", "--tasks", "4")
    assert done.returncode == 0, done.stderr
    return folder / "pool.json"


def _pool_spec(folder) -> dict:
    arms = {"rescue": {"train": {"recipe": "single"},
                       "assignment": {"mode": "rescue", "router": "rule", "k": 1,
                                      "pool": "pool.json"}}}
    return {**PAPERS_SPEC, "arms": arms}


def _pool_cases() -> list[tuple[tuple, str]]:
    keys = [("format",), ("space",), ("base",), ("sha256",), ("children",), ("rounds",),
            ("notes",), ("children", 0), ("children", 0, "name"), ("children", 0, "edit"),
            ("children", 0, "components"), ("children", 0, "round"), ("children", 0, "parent")]
    return [(k, m) for k in keys for m in ["delete", "null", "zero", "empty", "sigma", "list",
                                           "dict", "long"]]


POOL_CASES = _pool_cases()


def test_the_evolved_pool_plans(pool_file):
    (pool_file.parent / "spec.yaml").write_text(yaml.safe_dump(_pool_spec(pool_file.parent)))
    code, err = cli("validate", str(pool_file.parent / "spec.yaml"))
    assert code == 0, err


@pytest.mark.parametrize(("path", "mutation"), _sampled(
    POOL_CASES, [".".join(map(str, p)) + f"={m}" for p, m in POOL_CASES], every=2))
def test_an_edited_pool_file_is_refused_naming_it(pool_file, tmp_path, path, mutation):
    raw = json.loads(pool_file.read_text())
    if path[0] == "notes":
        raw.setdefault("notes", {"about": "evolved"})
    edited = _mutated(raw, path, _DELETE if mutation == "delete" else VALUES[mutation])
    (tmp_path / "pool.json").write_text(json.dumps(edited))
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(_pool_spec(tmp_path)))
    code, err = cli("validate", str(tmp_path / "spec.yaml"))
    assert_clean(code, err)
    assert code == 2, f"an edited pool ({path} = {mutation}) was accepted"
    line = err.strip().splitlines()[-1]
    assert "pool" in line and "spec.yaml" in line, line


# ------------------------------------------------------------------------------- evolve

EVOLVE = [
    (["--rounds", "0"], "--rounds"), (["--rounds", "-1"], "--rounds"),
    (["--rounds", ""], "--rounds"), (["--rounds", "1,,2"], "--rounds"),
    (["--rounds", "65"], "--rounds"), (["--rounds", "1e3"], "--rounds"),
    (["--rounds", "1000000"], "--rounds"), (["--rounds", ",".join(["9"] * 30)], "--rounds"),
    (["--rounds", "Σ"], "--rounds"), (["--tasks", "0"], "--tasks"),
    (["--tasks", "-3"], "--tasks"), (["--model", "no-such-model"], "no-such-model"),
    (["--model", ""], "model"), (["--spec", "missing.yaml"], "missing.yaml"),
    (["--editor", "http://[::1"], "http://[::1"), (["--editor", "missing.yaml"], "missing"),
    (["--editor", "{folder}"], "{folder}"), (["--editor", "{folder}/dict.yaml"], "dict.yaml"),
    (["--editor", "{folder}/binary.yaml"], "binary.yaml"),
    (["--editor", "{folder}/empty.yaml"], "empty.yaml"),
    (["--out", "{folder}"], "{folder}"),
]


@pytest.mark.parametrize(("args", "named"), EVOLVE, ids=[" ".join(a) for a, _ in EVOLVE])
def test_evolve_refuses_a_bad_option_or_editor_file_in_one_line(tmp_path, args, named):
    (tmp_path / "replies.yaml").write_text(yaml.safe_dump(["no JSON here"]))
    (tmp_path / "dict.yaml").write_text("set: {context: full}\n")
    (tmp_path / "binary.yaml").write_bytes(b"\x00\xff\xfe" * 100)
    (tmp_path / "empty.yaml").write_text("")
    given = {"--editor": str(tmp_path / "replies.yaml"), "--out": str(tmp_path / "p.json"),
             "--rounds": "1", "--tasks": "2"}
    for flag, value in zip(args[::2], args[1::2], strict=True):
        given[flag] = value.replace("{folder}", str(tmp_path))
    argv = [x for pair in given.items() for x in pair]
    code, err = cli("harness", "evolve", *argv)
    assert_clean(code, err)
    assert code == 2, err
    assert named.replace("{folder}", str(tmp_path)) in err, err
    assert not (tmp_path / "p.json").exists()


# ------------------------------------------------------------------------------- collect

COLLECT = [
    (["", "--harness", "bb/claude-code"], "teacher"),
    (["no-such-teacher", "--harness", "bb/claude-code"], "no-such-teacher"),
    (["http://[::1", "--harness", "bb/claude-code"], "http://[::1"),
    (["scripted", "--harness", "bb/nope"], "bb/nope"),
    (["scripted", "--harness", ""], "harness"),
    (["scripted", "--harness", "oos/shell"], "oos/shell"),
    (["scripted", "--harness", "bb/claude-code", "--tasks", "0"], "--tasks"),
    (["scripted", "--harness", "bb/claude-code", "--benchmark", "Σ"], "Σ"),
    (["scripted", "--harness", "bb/claude-code", "--split", "test"], "test"),
    (["scripted", "--harness", "bb/claude-code", "--benchmark", "clawgym", "--path",
      "/nonexistent"], "/nonexistent"),
]


@pytest.mark.parametrize(("args", "named"), COLLECT, ids=[" ".join(a) for a, _ in COLLECT])
def test_collect_refuses_bad_input_in_one_line_before_writing(tmp_path, monkeypatch, args,
                                                              named):
    from tests.harness.test_blackbox_failures import FAKES, _install

    _install(tmp_path / "harnesses", FAKES["crashes"])
    monkeypatch.setenv("HSCALE_HARNESSES", str(tmp_path / "harnesses"))
    code, err = cli("collect", *args, "--out", str(tmp_path / "out"))
    assert_clean(code, err)
    assert code == 2, err
    assert named in err, err
    assert not (tmp_path / "out").exists()
