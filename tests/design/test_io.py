import numpy as np
import pytest
from hypothesis import given, settings

from hscale.design import read_array, write_array
from hscale.errors import HscaleError
from tests.design.strategies import array_files, level_strings


def test_round_trip(tmp_path):
    arr = np.array([[0, 1, 2], [2, 1, 0]])
    path = tmp_path / "sub" / "a.csv"
    write_array(path, arr, ["S", "T", "O"])
    back, names = read_array(path)
    assert names == ["S", "T", "O"] and np.array_equal(back, arr)
    assert path.read_text().splitlines()[0] == "S,T,O"
    assert [p.name for p in path.parent.iterdir()] == ["a.csv"]  # no temporary files left


@pytest.mark.parametrize("text, where", [
    ("", "empty"),
    ("0,1\n1,0\n", "line 1"),
    ("A,B\n0,1\n1\n", "line 3"),
    ("A,B\n0,x\n", "line 2"),
    ("A,B\n0,-1\n", "line 2"),
    ("A,B\n", "no runs"),
    ("A,A\n0,1\n", "line 1"),
    # a header of numbers in any script's digits is no header; a factor is not a number
    ("\n٣\n0\n", "line 2 has no header"), ("٣,３\n0,1\n", "line 1 has no header"),
    ("A,١٢\n0,1\n", "line 1: a factor name is a number ('١٢')"),
])
def test_bad_files_name_file_and_line(tmp_path, text, where):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(HscaleError) as err:
        read_array(path)
    assert "bad.csv" in err.value.message and where in err.value.message


def test_written_files_have_the_usual_mode_and_folders_are_refused(tmp_path):
    import os

    path = tmp_path / "a.csv"
    write_array(path, np.array([[0, 1]]), ["A", "B"])
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask
    with pytest.raises(HscaleError, match="folder"):
        write_array(tmp_path, np.array([[0, 1]]), ["A", "B"])


def test_missing_file(tmp_path):
    with pytest.raises(HscaleError, match="no such file"):
        read_array(tmp_path / "nope.csv")


# --- hostile input ---------------------------------------------------------------------------

# Each malformed file or level string must end in an HscaleError within this many seconds.
CASE_SECONDS = 5.0


@pytest.mark.parametrize("field, word", [("٣", "'٣'"), ("３", "'３'"), ("1_0", "'1_0'"),
                                         ("+1", "'+1'"), ("1.0", "'1.0'"), ("-2", "negative"),
                                         ("9" * 5000, "too large"), ("10000", "too large")])
def test_levels_are_ascii_digits_only(tmp_path, field, word):
    path = tmp_path / "a.csv"
    path.write_text(f"A,B\n0,1\n1,{field}\n")
    with pytest.raises(HscaleError) as err:
        read_array(path)
    assert "a.csv: line 3" in err.value.message and word in err.value.message


def test_every_csv_problem_names_file_and_line(tmp_path):
    cases = {"A,B\n0," + "1" * 140_000 + "\n": "line 2",  # past the csv field limit
             'A,B\n0,"1\n1,0\n': "line 3",  # a quote left open to the end
             "A,B\n\n\n0,x\n": "line 4",  # blank lines still count
             'A,B\n0,"1,2"\n': "line 2"}
    for text, where in cases.items():
        path = tmp_path / "bad.csv"
        path.write_text(text)
        with pytest.raises(HscaleError) as err:
            read_array(path)
        assert "bad.csv" in err.value.message and where in err.value.message, text[:20]
    path.write_bytes(b"A,B\n0,1\n\xff,0\n")
    with pytest.raises(HscaleError, match="line 3: not UTF-8"):
        read_array(path)


def test_padding_leading_zeros_bom_and_crlf_are_fine(tmp_path):
    path = tmp_path / "a.csv"
    path.write_bytes(b"\xef\xbb\xbfA, B\r\n 0 ,0001\r\n\r\n1,\t0\r\n")
    array, names = read_array(path)
    assert names == ["A", "B"] and array.tolist() == [[0, 1], [1, 0]]


def test_a_huge_file_is_refused_before_reading(tmp_path, monkeypatch):
    # internal: tests the array reader's internals
    import hscale.design._io as io_module

    path = tmp_path / "big.csv"
    path.write_text("A,B\n" + "0,1\n" * 100)
    monkeypatch.setattr(io_module, "MAX_FILE_BYTES", 100)
    with pytest.raises(HscaleError, match="larger than hscale reads"):
        read_array(path)


def _ends_well(call, *args):
    """Run ``call``: it returns or raises HscaleError (anything else fails), in time."""
    import time

    start = time.perf_counter()
    try:
        out = call(*args)
    except HscaleError as err:
        assert err.message and "\n" not in err.one_line()
        out = None
    assert time.perf_counter() - start < CASE_SECONDS
    return out


@settings(max_examples=300, deadline=None)
@given(data=array_files)
def test_random_malformed_array_files_end_in_a_user_error(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("csv") / "a.csv"
    path.write_bytes(data)
    found = _ends_well(read_array, path)
    if found is not None:  # accepted: then it is a proper array of ASCII-digit levels
        array, names = found
        assert array.dtype == np.int64 and array.ndim == 2 and array.shape[1] == len(names)
        assert array.min() >= 0 and array.max() < 10_000
        assert not any(name.strip().removeprefix("-").isdecimal() for name in names)
        rows = [line for line in data.decode("utf-8-sig").splitlines() if line.strip()][1:]
        assert not any(c in "".join(rows) for c in "٣３१߃")


@settings(max_examples=300, deadline=None)
@given(text=level_strings)
def test_random_level_strings_end_in_a_user_error(text):
    from hscale.design import FactorSpace, parse_levels

    # internal: tests the space module's limits
    from hscale.design._space import MAX_TOTAL_LEVELS

    levels = _ends_well(parse_levels, text)
    if levels is not None:
        assert all(isinstance(s, int) and 2 <= s <= 10_000 for s in levels)
        assert sum(levels) <= MAX_TOTAL_LEVELS and text.isascii()
        assert _ends_well(FactorSpace.from_levels, text).levels == levels
