"""End-to-end tests of the ``hscale`` command line: each command as a user runs it, in this
process (tests.cli), and a few as real processes (the entry point, exit statuses, imports)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from hscale.design import is_orthogonal, read_array, write_array
from tests.cli import assert_user_error, hscale


def process(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hscale.cli", *args], capture_output=True,
                          text=True, timeout=120)


def test_a_real_process_writes_an_array_and_answers_a_user_error_in_one_line(tmp_path):
    """The smoke test of ``python -m hscale.cli``: exit 0 with output, exit 2 with one line."""
    out = tmp_path / "oa.csv"
    done = process("design", "oa", "3^5", "--runs", "18", "--out", str(out))
    assert done.returncode == 0 and "OA(18; 3^5; strength 2)" in done.stdout, done.stderr
    assert is_orthogonal(read_array(out)[0], 2)
    assert_user_error(process("design", "oa", "3^8", "--runs", "18"), "7")
    assert process("design", "verify", str(out), "--strength", "3").returncode == 1


def test_help_imports_neither_numpy_nor_torch():
    """The root lists its commands from a table: no command module is imported for --help."""
    code = ("import sys; from hscale.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit as exc:\n    code = exc.code\n"
            "heavy = ('numpy', 'pandas', 'torch', 'verl', 'ray', 'transformers')\n"
            "print(code, [m for m in heavy if m in sys.modules], file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stderr.strip().splitlines()[-1] == "0 []", out.stderr
    for command in ("design", "harness", "validate", "plan", "run", "report", "model"):
        assert command in out.stdout


def test_every_listed_command_loads_and_has_help():
    for command in ("design", "harness", "validate", "plan", "run", "report", "model"):
        result = hscale(command, "--help")
        assert result.returncode == 0, result.stderr
        assert "Usage: hscale " + command in " ".join(result.stdout.split())


def test_hscale_help_and_each_commands_help_say_the_same():
    """The root's list (read without importing a command) and each command's own help open
    with one sentence, the same one: help has one source."""
    from hscale.cli import COMMANDS, load_command

    differ = {}
    for name, (_, summary) in COMMANDS.items():
        first = " ".join((load_command(name).help or "").strip().split("\n\n")[0].split())
        if first != summary:
            differ[name] = (summary, first)
    assert differ == {}


def test_no_flag_is_shown_as_taking_a_value():
    """A flag (``--quick``, ``--help``) has no value type beside it in any command's help;
    an option that takes a value keeps its type; help's prose wraps to the terminal."""
    import typer

    from hscale.cli import COMMANDS, load_command

    def helps():
        for name in COMMANDS:
            command = load_command(name)
            yield name, command
            for sub, child in getattr(command, "commands", {}).items():
                yield f"{name} {sub}", child

    for name, command in helps():
        with typer.Context(command, info_name=f"hscale {name}") as ctx:
            shown = [opt for opt in command.get_params(ctx) if getattr(opt, "is_flag", False)]
            assert all(opt.metavar == "" for opt in shown), name
        # prose paragraphs reach the terminal unbroken: it wraps them to its width (typer
        # kept a docstring's line breaks after the first paragraph)
        for paragraph in (command.help or "").split("\n\n"):
            lines = paragraph.splitlines()
            if not any(line[:1].isspace() or line.startswith(("- ", "* ")) for line in lines):
                assert len(lines) == 1, f"{name}: {paragraph[:60]!r}"
    run = hscale("run", "--help", env={"COLUMNS": "200"})
    lines = {line.split()[1]: line for line in run.stdout.splitlines()
             if line.startswith("│ --")}
    assert "<bool>" not in run.stdout and "<path>" in lines["--out"]
    wide = hscale("evaluate", "--help", env={"COLUMNS": "200"}).stdout
    assert "On a 2-core CPU a 135M model generates" in wide  # one line at 200 columns


def test_oa_writes_a_verified_array(tmp_path):
    out = tmp_path / "oa18.csv"
    result = hscale("design", "oa", "3^5", "--runs", "18", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "OA(18; 3^5; strength 2)" in result.stdout
    array, names = read_array(out)
    assert array.shape == (18, 5) and names == ["A", "B", "C", "D", "E"]
    assert is_orthogonal(array, 2)
    verify = hscale("design", "verify", str(out))
    assert verify.returncode == 0 and "OK" in verify.stdout
    assert "via OA18.3^5#1, the best by GWLP of 10 non-isomorphic classes" in result.stdout


@pytest.mark.parametrize("levels, runs", [("3^5", 18), ("2^5", 16), ("2^5", 12), ("3^3", 18),
                                          ("2^4", 16)])
@pytest.mark.parametrize("seed", [None, 7])
def test_oa_is_the_best_ranked_class_wherever_the_classes_are_enumerated(levels, runs, seed):
    """What ``design oa`` writes has the GWLP of the first of ``design candidates`` (what
    ``design paper`` and the structured recipe use), shuffled or not."""
    from hscale.design import best_orthogonal_array, candidates, gwlp

    design = best_orthogonal_array(levels, runs=runs, seed=seed)
    best = candidates(levels, runs)[0]
    assert is_orthogonal(design.array, 2)
    assert np.allclose(gwlp(design.array, design.levels), gwlp(best.array, design.levels))
    assert design.method.startswith(best.id)


@pytest.mark.parametrize("args, runs, cols", [
    (("2^1,3^7",), 18, 8),
    (("3^4", "--strength", "3"), 27, 4),
    (("3^5", "--lam", "3"), 27, 5),
    (("2^7", "--names", "a,b,c,d,e,f,g"), 8, 7),
])
def test_oa_variants(tmp_path, args, runs, cols):
    out = tmp_path / "a.csv"
    result = hscale("design", "oa", *args, "--out", str(out))
    assert result.returncode == 0, result.stderr
    array, _ = read_array(out)
    assert array.shape == (runs, cols)
    t = int(args[args.index("--strength") + 1]) if "--strength" in args else 2
    assert is_orthogonal(array, t)


def test_oa_out_to_a_folder_is_refused(tmp_path):
    assert_user_error(hscale("design", "oa", "3^5", "--out", str(tmp_path)), "folder")


def test_oa_impossible_request_explains_and_writes_nothing(tmp_path):
    out = tmp_path / "x.csv"
    result = hscale("design", "oa", "3^8", "--runs", "18", "--out", str(out))
    assert_user_error(result, "Bose-Bush", "7")
    assert not out.exists()
    assert_user_error(hscale("design", "oa", "3^5", "--strength", "3", "--runs", "27"), "Bush")
    assert_user_error(hscale("design", "oa", "3^5", "--runs", "12"), "divisible by 9")


@pytest.mark.parametrize("args, word", [
    (("design", "oa", "3^x"), "3^x"),
    (("design", "oa", "3^5", "--runs", "18", "--lam", "2"), "either"),
    (("design", "oa", "3^5", "--runs", "eighteen"), "--runs"),
    (("design", "oa", "3^3", "--strength", "4"), "strength"),
    (("design", "bounds", "1^3"), "2 levels"),
    (("design", "neighbours", "S0-T1"), "S<level>"),
    (("design", "neighbours", "S0-T1-O2-C0-W1", "--radius", "9"), "radius"),
    (("design", "space", "3^3", "--start", "99"), "--start"),
    (("design", "frobnicate",), "frobnicate"),
    (("design", "oa"), "levels"),
    (("design", "oa", "3^5", "--seed", "-1"), "--seed"),
    (("design", "oa", "3^5", "--runs", "999999999999"), "more than hscale builds"),
    (("design", "oa", "3^100000"), "factors"),
    (("design", "candidates", "3^5", "--runs", "27"), "enumerator"),
    (("design", "space", "3^40"), "too many"),
    (("design", "bounds", "3^5", "--runs", "0"), "--runs"),
    (("design", "neighbours", "A0-B0-C0-D0-E0-F0-G0-H0", "--levels", "10^8", "--radius", "6"),
     "too many"),
])
def test_bad_input_is_one_line_exit_2(args, word):
    assert_user_error(hscale(*args), word)


def test_verify_rejects_a_non_array_with_exit_1(tmp_path):
    path = tmp_path / "bad.csv"
    array = np.array([[0, 0], [0, 1], [1, 0], [1, 1], [1, 1], [0, 0]])
    array[0] = [1, 1]
    write_array(path, array, ["A", "B"])
    result = hscale("design", "verify", str(path), "--table")
    assert result.returncode == 1
    assert "NOT an orthogonal array" in result.stdout and "(0, 1)" in result.stdout
    assert "duplicate rows" in result.stdout
    assert "balance table" in result.stdout


def test_verify_strength_three_and_levels(tmp_path):
    path = tmp_path / "ff.csv"
    write_array(path, np.array(list(np.ndindex(2, 2, 2))), ["A", "B", "C"])
    assert hscale("design", "verify", str(path), "--strength", "3").returncode == 0
    # declaring 3 levels for A makes the level-2 cell empty: not an array
    assert hscale("design", "verify", str(path), "--levels", "3,2,2").returncode == 1


@pytest.mark.parametrize("content, word", [
    ("", "empty"), ("A,B\n0,z\n", "line 2"), ("0,1\n1,0\n", "header")])
def test_verify_bad_files(tmp_path, content, word):
    path = tmp_path / "f.csv"
    path.write_text(content)
    assert_user_error(hscale("design", "verify", str(path)), "f.csv", word)
    assert_user_error(hscale("design", "verify", str(tmp_path / "none.csv")), "no such file")


def test_verify_levels_mismatch(tmp_path):
    path = tmp_path / "f.csv"
    write_array(path, np.array([[0, 1], [1, 0]]), ["A", "B"])
    assert_user_error(hscale("design", "verify", str(path), "--levels", "2^3"), "--levels")


def test_bounds():
    result = hscale("design", "bounds", "3^5")
    assert result.returncode == 0, result.stderr
    assert "N >= 11" in result.stdout and "multiple of 9" in result.stdout
    assert "18" in result.stdout
    result = hscale("design", "bounds", "3^8", "--runs", "18")
    assert result.returncode == 1 and "Bose-Bush" in result.stdout
    result = hscale("design", "bounds", "3^5", "--strength", "3", "--runs", "27")
    assert result.returncode == 1 and "Bush" in result.stdout
    assert hscale("design", "bounds", "3^7", "--runs", "18").returncode == 0


def test_space_and_neighbours():
    result = hscale("design", "space", "--limit", "5")
    assert result.returncode == 0
    assert "243 configurations" in result.stdout and "S0-T0-O0-C0-W1" in result.stdout
    assert "json_call" in result.stdout
    result = hscale("design", "neighbours", "S0-T1-O2-C0-W1")
    assert result.returncode == 0
    lines = [ln.strip() for ln in result.stdout.splitlines()[1:] if ln.strip()]
    assert len(lines) == 10 and "S1-T1-O2-C0-W1" in lines
    result = hscale("design", "neighbours", "A0-B0-C0", "--levels", "2^3", "--radius", "2",
                    "--within")
    assert result.returncode == 0 and "7 configurations within" in result.stdout


def test_candidates_lists_ten_classes(tmp_path):
    out = tmp_path / "best.csv"
    result = hscale("design", "candidates", "3^5", "--runs", "18", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "10 non-isomorphic" in result.stdout
    best = next(line for line in result.stdout.splitlines() if "OA18.3^5#1 " in line)
    cells = [c.strip() for c in best.split("│")]
    assert cells[2:5] == ["3", "3..5", "2"]  # min distance, distance range, covering radius
    array, _ = read_array(out)
    assert is_orthogonal(array, 2)


@pytest.mark.parametrize("levels, runs, why", [
    ("3^1,2^5", "12", "the complete enumeration finds none"),
    ("3^8", "18", "Bose-Bush bound allows at most 7 factors"),
    ("3^5", "12", "divisible by 9"),
    ("2^30", "24", "Rao bound N >= 31"),  # past the enumerator's size, but a bound answers
])
def test_candidates_when_no_class_exists_is_a_one_line_negative_answer(tmp_path, levels, runs,
                                                                        why):
    out = tmp_path / "best.csv"
    result = hscale("design", "candidates", levels, "--runs", runs, "--out", str(out))
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stderr == ""
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"no OA({runs}; {levels}) of strength 2 "
                                                   "exists: "), result.stdout
    assert why in lines[0] and not out.exists()


def test_candidates_help_states_the_exit_statuses():
    text = " ".join(hscale("design", "candidates", "--help").stdout.split())
    assert "Exit 0" in text and "Exit 1: no such array exists" in text
    assert "Exit 2: bad input" in text


def test_verify_counts_a_large_non_array_and_lists_the_first_ten(tmp_path):
    path = tmp_path / "random.csv"
    write_array(path, np.random.default_rng(0).integers(0, 3, size=(243, 60)),
                [f"F{j}" for j in range(60)])
    result = hscale("design", "verify", str(path), "--strength", "3")
    assert result.returncode == 1, result.stderr
    lines = result.stdout.strip().splitlines()
    assert "NOT an orthogonal array" in lines[0] and "34220 of 34220" in lines[0]
    assert "worst columns" in lines[0]
    listed = [line for line in lines[1:] if line.strip().startswith("columns (")]
    assert len(listed) == 10 and "(0, 1, 2)" in listed[0]
    assert lines[-1].strip() == "... and 34210 more"


def test_bounds_and_oa_agree_on_the_smallest_buildable_n():
    """Without --runs, design oa searches the sizes below the first construction (3^5 at
    strength 3: 54 by search, not Bush's 81), and bounds reports the same N."""
    bounds = hscale("design", "bounds", "3^5", "--strength", "3")
    assert bounds.returncode == 0, bounds.stderr
    row = next(line for line in bounds.stdout.splitlines() if "smallest N hscale builds" in line)
    assert "54 via search_oa" in row
    built = hscale("design", "oa", "3^5", "--strength", "3")
    assert built.returncode == 0 and "OA(54; 3^5; strength 3)" in built.stdout


def test_design_oa_builds_an_ovoid_array():
    """5^26 at strength 3: the elliptic quadric's 26 points in PG(3, 5) give N = 5^4, the
    least N the bounds allow (a greedy cap had 20), and bounds reports the same N."""
    built = hscale("design", "oa", "5^26", "--strength", "3")
    assert built.returncode == 0, built.stderr
    assert "OA(625; 5^26; strength 3) via ovoid(q=5)" in built.stdout
    assert "verified: strength 3" in built.stdout
    bounds = hscale("design", "bounds", "5^26", "--strength", "3")
    assert bounds.returncode == 0, bounds.stderr
    rows = bounds.stdout.splitlines()
    assert "625" in next(line for line in rows if "smallest N passing all" in line)
    assert "625 via ovoid(q=5)" in next(line for line in rows if "smallest N hscale builds" in line)


def test_paper_design(tmp_path):
    result = hscale("design", "paper", "--out", str(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "FAIL" not in result.stdout and result.stdout.count("PASS") >= 8
    train, _ = read_array(tmp_path / "train.csv")
    evals, _ = read_array(tmp_path / "eval.csv")
    assert is_orthogonal(train, 2) and is_orthogonal(evals, 2)
    assert (train == 0).all(axis=1).any()
    assert not {tuple(r) for r in train} & {tuple(r) for r in evals}


def test_harness_list_and_render():
    result = hscale("harness", "list")
    assert result.returncode == 0 and "tool_interface/json_call" in result.stdout
    assert "oos/shell" in result.stdout
    result = hscale("harness", "render", "S1-T2-O0-C0-W1")
    assert result.returncode == 0, result.stderr
    assert "model call 0" in result.stdout and "reward 1" in result.stdout
    assert "fetch(" in result.stdout  # python_call syntax reaches the model
    assert_user_error(hscale("harness", "render", "S9-T0"), "S9-T0")
    assert_user_error(hscale("harness", "render", "S0-T0-O0-C0-W0", "--task", "nope"), "nope")


def test_harness_selfcheck():
    result = hscale("harness", "selfcheck", "--tasks", "2")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "S0-T0-O0-C0-W0 100%" in result.stdout and "oos/actions 100%" in result.stdout
    assert "overall 100.00%" in result.stdout and "do-nothing reward 0" in result.stdout
    assert_user_error(hscale("harness", "selfcheck", "--tasks", "0"), "--tasks")


@pytest.mark.parametrize("args, words", [
    (("design", "space", "10000^10000"), ("100000000 levels",)),
    (("design", "space", "2^5000"), ("about 10^1505",)),
    (("design", "oa", "2^5000"), ("multiply-adds",)),
    (("design", "oa", "3^5", "--runs", "9" * 40), ("OA(about 10^40; 3^5)",)),
    (("design", "candidates", "2^15", "--runs", "16"), ("enumerator",)),
    (("design", "candidates", "2^23", "--runs", "24"), ("enumerator",)),
    (("design", "bounds", "2^3000", "--strength", "2999"), ("strength 2999",)),
])
def test_huge_requests_fail_fast_on_one_line(args, words):
    import time

    start = time.perf_counter()
    assert_user_error(hscale(*args), *words)
    assert time.perf_counter() - start < 30


def test_a_wide_array_is_built_and_checked_in_seconds(tmp_path):
    import time

    start = time.perf_counter()
    result = hscale("design", "oa", "2^2000", "--out", str(tmp_path / "a.csv"))
    assert result.returncode == 0, result.stderr
    assert "OA(2016; 2^2000" in result.stdout and "skipped" in result.stdout
    assert time.perf_counter() - start < 60


@pytest.mark.parametrize("content, word", [
    ("A,B\n0,1\n1,٣\n", "line 3"), ("A,B\n0,１\n", "line 2"), ("A,B\n0,1_0\n", "line 2"),
    ("A,B\n0," + "1" * 140_000 + "\n", "line 2"), ('A,B\n0,"1\n', "line 2"),
    ("A,\x1b[31mB\n0,1\n", "line 1")], ids=["arabic", "fullwidth", "underscore", "long field",
                                          "open quote", "control character"])
def test_verify_bad_levels_and_csv_errors_name_file_and_line(tmp_path, content, word):
    path = tmp_path / "f.csv"
    path.write_text(content)
    assert_user_error(hscale("design", "verify", str(path)), "f.csv", word)


def test_verify_prints_markup_like_names_as_they_are(tmp_path):
    path = tmp_path / "[red]x.csv"
    write_array(path, np.array([[0, 0], [0, 1], [1, 0], [1, 1]]), ["[/]", "[bold]B"])
    result = hscale("design", "verify", str(path), "--table")
    assert result.returncode == 0, result.stderr
    assert "[red]x.csv" in result.stdout and "[/] x [bold]B" in result.stdout
