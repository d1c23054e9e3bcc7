"""The docs cannot rot: the generated references cover everything the code accepts (every
spec key, every command and option, every contracted column), and every command block of the
tutorial and how-to pages runs (slow: CI's second step), page by page, each page in a working
folder of its own beside the repository's experiments, so a page whose command fails fails
CI. A block marked ``<!-- no-run: why -->`` (a GPU, a cluster, a download) is listed with its
reason instead."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import typing
from pathlib import Path

import pytest
from pydantic import BaseModel

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
RUN_PAGES = sorted((DOCS / "tutorial").glob("*.md")) + sorted((DOCS / "how-to").glob("*.md"))
BLOCK = re.compile(r"(?:<!-- no-run: (?P<why>[^>]*) -->\n)?```bash\n(?P<body>.*?)```", re.S)


def _models(annotation: typing.Any) -> set[type[BaseModel]]:
    """Every spec model an annotation reaches (through unions, lists and mappings)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        out = {annotation}
        for field in annotation.model_fields.values():
            out |= _models(field.annotation)
        return out
    return {m for arg in typing.get_args(annotation) for m in _models(arg)}


def test_the_spec_reference_covers_every_key_the_spec_models_accept():
    from hscale.train.spec import Arm, ExperimentSpec

    # internal: checks the generated spec reference
    from hscale.train.spec._reference import _sections, spec_keys, spec_reference

    reachable = _models(ExperimentSpec) | _models(Arm)  # arms are validated as Arm
    documented = {model for _, model, _ in _sections()}
    assert documented == reachable, {m.__name__ for m in reachable ^ documented}
    page = spec_reference(ROOT / "experiments")
    for section, model, _ in _sections():
        part = page.split(f"## `{section}`\n" if section else "## Top level\n")[1].split("\n## ")[0]
        for name, field in model.model_fields.items():
            assert f"| `{name}` |" in part, (section, name)
            assert field.description, f"{model.__name__}.{name} says nothing of itself"
    assert len(spec_keys()) == sum(len(m.model_fields) for _, m, _ in _sections())
    # a shipped spec's value is the example of the keys it sets
    assert "`0.125` (experiments/demo.yaml)" in page
    assert "`[bb/claude-code]`" in page or "bb/claude-code" in page


def test_the_command_reference_has_every_command_and_option():
    from hscale.cli import COMMANDS, load_command

    # internal: checks the generated CLI reference
    from hscale.cli._reference import cli_commands, cli_reference

    page = cli_reference()
    paths = cli_commands()
    assert {p.split()[1] for p in paths} == set(COMMANDS)
    assert "hscale design oa" in paths and "hscale harness evolve" in paths
    for name in COMMANDS:
        command = load_command(name)
        if hasattr(command, "list_commands"):
            continue
        for param in command.params:
            if param.param_type_name == "option" and param.name != "help":
                assert f"`{param.opts[0]}`" in page, (name, param.opts)


def test_the_contracts_reference_has_every_column():
    import hscale.contracts as c

    # internal: checks the generated contracts reference
    from hscale.contracts._reference import contracts_reference

    page = contracts_reference()
    for name, columns in ((c.EVAL, {**c.EVAL_COLUMNS, **c.EVAL_OPTIONAL}),
                          (c.TRANSCRIPTS, c.TRANSCRIPT_COLUMNS),
                          (c.ROLLOUTS, c.ROLLOUT_COLUMNS), (c.SCHEDULE, c.SCHEDULE_COLUMNS)):
        part = page.split(f"## `{name}`")[1].split("\n## ")[0]
        assert all(f"| `{k}` |" in part for k in columns), name
    assert all(f"| `{k}` |" in page for k in c.Manifest.model_fields)


def blocks() -> list[tuple[str, int, str, str | None]]:
    """(page, block number, commands, why it does not run) of every bash block."""
    out = []
    for page in RUN_PAGES:
        for n, found in enumerate(BLOCK.finditer(page.read_text()), 1):
            out.append((str(page.relative_to(DOCS)), n, found["body"], found["why"]))
    return out


def test_every_page_that_shows_commands_runs_most_of_them():
    listed = blocks()
    assert len(RUN_PAGES) >= 10
    run = [b for b in listed if b[3] is None]
    assert len(run) >= 15, len(run)
    assert all(why.strip() for *_, why in listed if why is not None)


def _runnable_pages() -> list[str]:
    return list(dict.fromkeys(page for page, _, _, why in blocks() if why is None))


@pytest.mark.slow
@pytest.mark.parametrize("page", _runnable_pages())
def test_the_tutorial_and_how_to_commands_run(page, tmp_path):
    """A page's runnable blocks, their lines in order, in a folder of the page's own beside
    the repository's experiments: each page works on its own, as a reader who opens only that
    page runs it. ``pip install`` lines are the environment this suite runs in, so they are
    not run again."""
    (tmp_path / "experiments").symlink_to(ROOT / "experiments")
    (tmp_path / "notebooks").symlink_to(ROOT / "notebooks")
    failures = []
    for _, n, body, _ in [b for b in blocks() if b[0] == page and b[3] is None]:
        lines = [line for line in body.splitlines()
                 if line.strip() and not line.lstrip().startswith(("pip install", "#"))]
        script = "set -e\n" + "\n".join(lines)
        done = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True,
                              text=True, timeout=600,
                              env={**os.environ, "PYTHONUNBUFFERED": "1",
                                   "PATH": f"{Path(sys.executable).parent}:"
                                           + os.environ["PATH"]})
        if done.returncode != 0:
            failures.append(f"{page} block {n} (exit {done.returncode}): "
                            + (done.stderr.strip().splitlines() or ["(no stderr)"])[-1])
    assert not failures, "\n".join(failures)


def test_sphinx_roles_in_docstrings_show_as_the_code_they_name():
    import importlib.util

    spec = importlib.util.spec_from_file_location("hooks", DOCS / "_hooks.py")
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    html = ("see :func:<code>orthogonal_array</code> and :class:<code>~hscale.design."
            "FactorSpace</code>, :meth:<code>close</code>")
    assert hooks.plain_roles(html) == ("see <code>orthogonal_array</code> and "
                                       "<code>FactorSpace</code>, <code>close</code>")


def tour_lines() -> list[str]:
    """README's tour, a command a line, its comments dropped, in the order a reader runs it."""
    readme = (ROOT / "README.md").read_text()
    block = readme.split("## A short tour", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    lines = [re.sub(r"\s+#.*$", "", line).strip() for line in block.splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


@pytest.mark.slow
def test_readmes_tour_runs_line_by_line_in_order(tmp_path):
    """Each line of README's tour, in order, as a reader runs them from a fresh checkout's
    folder: every one exits 0 (the viewer serves until it is stopped: it says where)."""
    (tmp_path / "experiments").symlink_to(ROOT / "experiments")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    assert len(tour_lines()) >= 10
    for line in tour_lines():
        if line.startswith("hscale view") and "--export" not in line:
            assert _serves(line, tmp_path, env), line
            continue
        done = subprocess.run(["bash", "-c", line], cwd=tmp_path, capture_output=True,
                              text=True, timeout=900, env=env)
        assert done.returncode == 0, (line, done.stderr[-1000:])


def _serves(line: str, cwd: Path, env: dict[str, str], wait: float = 60) -> bool:
    """Whether a serving command says where it serves within ``wait`` seconds (then it is
    stopped as a reader stops it, with Ctrl-C)."""
    proc = subprocess.Popen(["bash", "-c", f"exec {line}"], cwd=cwd, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    timer = threading.Timer(wait, proc.kill)
    timer.start()
    try:
        return any("open http://127.0.0.1:" in out for out in proc.stdout)
    finally:
        timer.cancel()
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)


def test_what_the_docs_say_an_arm_trains_on_is_what_the_code_builds():
    """A paragraph that names a recipe's arm and lists harnesses lists the ones the code
    trains it on (First-order-3 was once described as 'the base and two one-component
    changes')."""
    from hscale.design import first_order
    from hscale.harness import factor_space

    space = factor_space()
    built = {"first-order-3": set(first_order(space).labels),
             "single-harness": {space.label(space.base)}}
    pages = [ROOT / "README.md", *DOCS.rglob("*.md")]
    checked = 0
    for page in pages:
        for paragraph in re.split(r"\n\s*\n|\n\|", page.read_text()):
            lowered = paragraph.lower()
            for arm, labels in built.items():
                if arm not in lowered:
                    continue
                assert "one-component change" not in lowered, (page, paragraph[:200])
                named = set(re.findall(r"S\d-T\d-O\d-C\d-W\d", paragraph))
                if named and arm == "first-order-3":
                    assert named == labels, (page, named)
                    checked += 1
    assert checked >= 2  # the demo tutorial and the designs page say it
