"""Every eval.parquet row is built by the contract's one constructor (train.contracts.eval_row),
never by hand: a writer that spells the row out drifts from the others the day a column is
added. A test over the source tree, as the import test is."""

from __future__ import annotations

import ast
from pathlib import Path

from hscale.contracts import EVAL_COLUMNS
from tests.test_imports import modules

# An episode's own fields: a dict literal naming them beside the run's identity is a row.
EPISODE_FIELDS = {"reward", "success", "turns"}
CONSTRUCTOR = "hscale.contracts._tables"


def hand_built_rows(tree: ast.AST) -> list[int]:
    """Lines of dict literals (or dict(...) calls) holding an episode's fields and at least
    two more eval.parquet columns."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            keys = {k.value for k in node.keys
                    if isinstance(k, ast.Constant) and isinstance(k.value, str)}
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "dict":
            keys = {k.arg for k in node.keywords if k.arg}
        else:
            continue
        if keys >= EPISODE_FIELDS and len((keys - EPISODE_FIELDS) & set(EVAL_COLUMNS)) >= 2:
            found.append(node.lineno)
    return found


def test_the_detector_finds_a_hand_built_row():
    source = ('rows.append({"experiment": m.experiment, "arm": m.arm, "reward": r,\n'
              '             "success": s, "turns": t})\n'
              'other = dict(run=0, task_id="t", reward=1.0, success=True, turns=2)\n'
              'fine = {"reward": 1.0, "success": True, "turns": 1}\n')
    assert sorted(hand_built_rows(ast.parse(source))) == [1, 3]


def test_no_writer_builds_an_eval_row_by_hand():
    offenders = {}
    for name, path in modules().items():
        if name == CONSTRUCTOR:
            continue
        lines = hand_built_rows(ast.parse(path.read_text()))
        if lines:
            offenders[str(Path(path).relative_to(Path(__file__).resolve().parents[1]))] = lines
    assert offenders == {}, ("build eval rows with hscale.contracts.eval_row "
                             "(the run's recorder, hscale.train.planning.Recorder)")


# What writes a run's result rows: the contract's writers, and a parquet write to one of
# the result files' names, called by the recorder alone
WRITERS = {"write_eval", "write_rollouts"}
RESULT_NAMES = {"TRAIN", "EVAL", "ROLLOUTS", "TRANSCRIPTS"}
RECORDER = "hscale.train.planning._recorder"
# fabricates whole planted studies (tests, benchmarks): no episode is played
FABRICATOR = "hscale.analysis._synthetic"


def _call_name(node: ast.Call) -> str | None:
    return getattr(node.func, "id", None) or getattr(node.func, "attr", None)


def writer_calls(tree: ast.AST) -> list[int]:
    """Lines calling a result-file writer (by name or as an attribute), or writing parquet
    to a path that names a result file."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _call_name(node)
        named = {n.id for arg in node.args[:1] for n in ast.walk(arg)
                 if isinstance(n, ast.Name)}
        if name in WRITERS or (name == "write_parquet" and named & RESULT_NAMES):
            found.append(node.lineno)
    return found


def test_the_writer_detector_sees_every_spelling():
    source = ("write_eval(d, rows)\ncontracts.write_rollouts(d, [])\nwrite_status(d)\n"
              "write_parquet(d / TRAIN, frame)\nwrite_parquet(d / SCHEDULE, frame)\n")
    assert writer_calls(ast.parse(source)) == [1, 2, 4]


def test_only_the_recorder_writes_a_runs_result_rows():
    """A driver hands what it played to hscale.train.planning.Recorder; one that writes
    eval.parquet, rollouts.parquet or train.parquet itself is where a new column would have
    to be added twice."""
    offenders = {name: lines for name, path in modules().items()
                 if name not in (RECORDER, CONSTRUCTOR, FABRICATOR)
                 and (lines := writer_calls(ast.parse(path.read_text())))}
    assert offenders == {}, "hand the rows to the run's Recorder instead"


def test_the_constructor_itself_holds_every_contracted_column():
    tree = ast.parse(Path(modules()[CONSTRUCTOR]).read_text())
    assert hand_built_rows(tree), "eval_row should be where the row is spelled out"
