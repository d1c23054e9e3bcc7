"""Progress off a terminal: a line as work finishes, at most every ``every_s``, and a
'working' line while nothing finishes for a long time (a real model's episode can take
minutes), never after the block has ended."""

from __future__ import annotations

import io
import time

from rich.console import Console

# internal: tests the CLI's progress reporter
from hscale.cli._progress import QUIET_S, progress


def test_off_a_terminal_says_it_is_working_while_nothing_finishes(capsys):
    console = Console(file=io.StringIO(), force_terminal=False)
    every = 0.05
    with progress("episodes", console, every_s=every) as update:
        update(0, 2)
        time.sleep(every * QUIET_S * 3)
        update(1, 2)
        update(2, 2)
    time.sleep(every * QUIET_S * 2)  # nothing after the block
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("episodes: 0/2 (")
    working = [line for line in lines if line.endswith("working)")]
    assert 1 <= len(working) <= 3 and all(line.startswith("episodes: 0/2") for line in working)
    assert lines[-1].startswith("episodes: 2/2 (")


def test_no_working_line_before_any_count(capsys):
    console = Console(file=io.StringIO(), force_terminal=False)
    with progress("runs", console, every_s=0.02):
        time.sleep(0.02 * QUIET_S * 2)
    assert capsys.readouterr().err == ""
