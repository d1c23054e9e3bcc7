"""A plugin is the user's code, run at import: it is first imported in a child process with a
time bound, so one that loops, waits, ends the process (``sys.exit``, ``os._exit``) or
crashes the interpreter is refused with a line that says so, and never hangs hscale or
decides its exit code. Only a plugin that imports cleanly there is imported here.

The bound is ``HSCALE_PLUGIN_SECONDS`` (default 60 s: a plugin that imports torch takes a
few seconds); each file is probed once a process, by content.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from hscale.errors import HscaleError

SECONDS = 60.0
_DONE = "hscale: plugin imported"
# the child imports the plugin as hscale would, then says so: an exit before that line is
# the plugin's own
_CHILD = f"""
import importlib, importlib.util, sys
where, module = sys.argv[1], sys.argv[2]
if where:
    spec = importlib.util.spec_from_file_location(module, where)
    loaded = importlib.util.module_from_spec(spec)
    sys.modules[module] = loaded
    spec.loader.exec_module(loaded)
else:
    importlib.import_module(module)
sys.stdout.flush()
print({_DONE!r}, flush=True)
"""
_PROBED: set[tuple[str, str]] = set()


def bound() -> float:
    raw = os.environ.get("HSCALE_PLUGIN_SECONDS", "").strip()
    try:
        seconds = float(raw) if raw else SECONDS
    except ValueError:
        raise HscaleError(f"HSCALE_PLUGIN_SECONDS={raw!r} is not a number of seconds",
                          f"unset it for {SECONDS:g} s, or give e.g. 120") from None
    if not 0 < seconds <= 86_400:
        raise HscaleError(f"HSCALE_PLUGIN_SECONDS={raw!r} is out of range",
                          "give a number of seconds between 0 and 86400")
    return seconds


def probe(name: str, module: str, sha256: str, path: Path | None = None) -> None:
    """Import plugin ``module`` (from the file ``path``, else by name) in a child process;
    an HscaleError naming the plugin ``name`` when it does not import within the bound."""
    if (module, sha256) in _PROBED:
        return
    seconds = bound()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p or os.getcwd() for p in sys.path)}
    try:
        done = subprocess.run([sys.executable, "-c", _CHILD, str(path or ""), module],
                              capture_output=True, text=True, errors="replace",
                              timeout=seconds, env=env, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise HscaleError(f"plugin {name} did not finish importing in {seconds:g} s (a loop "
                          "or a wait at import time?)", "move long work out of import time, "
                          "or raise HSCALE_PLUGIN_SECONDS") from None
    if done.returncode == 0 and _DONE in done.stdout.splitlines():
        _PROBED.add((module, sha256))
        return
    last = next((line.strip() for line in reversed(done.stderr.splitlines()) if line.strip()),
                "")
    if done.returncode == 0 or not last:
        raise HscaleError(f"plugin {name} ended the process while importing (exit code "
                          f"{done.returncode})", "a plugin must not call sys.exit, exit or "
                          "os._exit at import time: registering is all it should do")
    raise HscaleError(f"plugin {name} failed to import (exit code {done.returncode}): {last}",
                      f"run python {path} to see the whole traceback" if path else
                      f"run python -c 'import {module}' to see the whole traceback")
