import numpy as np
import pytest

from design.io import read_array, write_array
from hscale.errors import HscaleError


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
