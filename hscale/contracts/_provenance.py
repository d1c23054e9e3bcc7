"""``provenance.jsonl``: what made a run, one JSON line each time it starts or resumes.

A manifest fixes what a run should do; this file says what did it: hscale's version and
source revision, Python and the packages that shape results, the backend and its settings,
the hardware, the command line and the time. The runner appends a line as a run starts or
resumes (a Ray task adds its node's), an export as it writes a run's inputs, so a study put
together over weeks says when its runs were made under other code.

Capturing it is cheap: versions come from package metadata (nothing is imported to read
them), the revision from ``git`` and GPUs from ``nvidia-smi`` where they exist, each with a
short timeout, and what cannot change within a process is read once.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hscale.files import atomic_write_bytes

PROVENANCE = "provenance.jsonl"
# The packages whose versions shape a run's numbers (a study mixing them is warned of); the
# others recorded beside them only say what ran.
SHAPING = ("torch", "verl", "transformers", "vllm", "sglang", "numpy")
RECORDED = (*SHAPING, "flash-attn", "peft", "ray", "pandas", "pyarrow")
EVENTS = ("start", "resume", "export", "ray-task")
TIMEOUT_S = 3.0  # each git or nvidia-smi call; a hung tool costs a run this, not forever


class Revision(BaseModel):
    """hscale's source revision: the commit, whether tracked files differ from it (and a
    digest of that difference, so two dirty trees can be told apart), its origin."""

    model_config = ConfigDict(frozen=True, extra="allow")

    commit: str
    dirty: bool = False
    diff: str = ""
    origin: str = ""

    def short(self) -> str:
        return self.commit[:7] + (f"+dirty:{self.diff[:7]}" if self.dirty else "")


class Gpu(BaseModel):
    model_config = ConfigDict(frozen=True, extra="allow")

    name: str
    memory_mib: int | None = None


class Hardware(BaseModel):
    """The machine: host, operating system, CPU model and threads, memory, GPUs (with the
    driver and CUDA versions where there are any)."""

    model_config = ConfigDict(frozen=True, extra="allow")

    host: str = ""
    os: str = ""
    cpu: str = ""
    threads: int = 0
    memory_gib: float | None = None
    gpus: list[Gpu] = Field(default_factory=list)
    driver: str = ""
    cuda: str = ""

    def line(self) -> str:
        """``2 x NVIDIA H100 80GB (81559 MiB), driver 550.54, CUDA 12.4; AMD EPYC (32
        threads)`` (CPU alone when there is no GPU)."""
        cpu = f"{self.cpu or 'unknown CPU'} ({self.threads} threads)"
        if not self.gpus:
            return cpu
        names = sorted({g.name for g in self.gpus})
        gpu = f"{len(self.gpus)} x {' + '.join(names)}"
        memory = {g.memory_mib for g in self.gpus if g.memory_mib}
        gpu += f" ({max(memory)} MiB)" if memory else ""
        gpu += "".join(f", {k} {v}" for k, v in (("driver", self.driver),
                                                   ("CUDA", self.cuda)) if v)
        return f"{gpu}; {cpu}"


class Provenance(BaseModel):
    """One line of provenance.jsonl: the ``event`` (start, resume, export, or a Ray task
    starting on its node), the manifest it ran, hscale's version and revision, Python, the
    recorded packages' versions (None: not installed), the backend and its settings, the
    hardware, the command line and the time."""

    model_config = ConfigDict(frozen=True, extra="allow")

    event: str
    time: str
    manifest_hash: str = ""
    hscale: str
    revision: Revision | None = None
    python: str
    packages: dict[str, str | None] = Field(default_factory=dict)
    backend: str = ""
    settings: dict[str, Any] = Field(default_factory=dict)
    hardware: Hardware = Field(default_factory=Hardware)
    argv: list[str] = Field(default_factory=list)

    def code(self) -> str:
        """hscale's code in a few words: ``hscale 0.1.0 (commit abc1234)``, or the version
        alone where it ran from an installed wheel (no repository)."""
        where = f" (commit {self.revision.short()})" if self.revision else ""
        return f"hscale {self.hscale}{where}"

    def shaping(self) -> dict[str, str]:
        """What must agree across a study's runs for their numbers to be comparable: the code
        (:meth:`code`) and each result-shaping package installed."""
        out = {"hscale": self.code().removeprefix("hscale ")}
        out.update({name: version for name in SHAPING
                    if (version := self.packages.get(name)) is not None})
        return out

    def line(self) -> str:
        """One line: the code, the shaping packages, Python, the backend, the hardware."""
        packages = ", ".join(f"{k} {v}" for k, v in self.shaping().items() if k != "hscale")
        return (f"{self.code()}, {packages + ', ' if packages else ''}Python {self.python}"
                f"{', backend ' + self.backend if self.backend else ''}, on "
                f"{self.hardware.line()}")


def capture_provenance(event: str, *, manifest_hash: str = "", backend: str = "",
                       settings: dict[str, Any] | None = None,
                       argv: list[str] | None = None) -> Provenance:
    """This process's provenance now (what cannot change within it is read once)."""
    version, revision, python, packages, hardware = _static()
    return Provenance(event=event, time=datetime.now(UTC).isoformat(timespec="seconds"),
                      manifest_hash=manifest_hash, hscale=version, revision=revision,
                      python=python, packages=packages, backend=backend,
                      settings=plain_settings(settings or {}), hardware=hardware,
                      argv=list(sys.argv if argv is None else argv))


def plain_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """The settings JSON can hold (a backend's attributes: lists, numbers, text)."""
    out = {}
    for key, value in settings.items():
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            continue
        out[str(key)] = value
    return out


def append_provenance(run_dir: str | Path, record: Provenance) -> None:
    """Add ``record`` as the last line of the run's provenance.jsonl (the file is rewritten
    atomically: a killed writer leaves the old file or the new one, never half a line)."""
    path = Path(run_dir) / PROVENANCE
    try:
        old = path.read_bytes()
    except FileNotFoundError:
        old = b""
    if old and not old.endswith(b"\n"):
        old += b"\n"
    atomic_write_bytes(path, old + record.model_dump_json().encode() + b"\n")


def read_provenance(run_dir: str | Path) -> tuple[list[Provenance], list[str]]:
    """The run's provenance lines, oldest first, and what was wrong with the file: a line
    that is not a record of this contract is skipped and named (``provenance.jsonl line 3:
    not JSON``); nothing and no problem where the run has no such file (an older run)."""
    path = Path(run_dir) / PROVENANCE
    if not path.is_file():
        return [], []
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return [], [f"{PROVENANCE}: unreadable ({exc.strerror or type(exc).__name__})"]
    records, problems = [], []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except ValueError:
            problems.append(f"{PROVENANCE} line {number}: not JSON, skipped")
            continue
        try:
            records.append(Provenance.model_validate(raw))
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(p) for p in err["loc"]) or "(top level)"
            field = "".join(c if c.isprintable() else "?" for c in field[:80])  # a key's text
            problems.append(f"{PROVENANCE} line {number}: {field}: {err['msg']}, skipped")
    return records, problems


# --- what this process is --------------------------------------------------------------
@cache
def _static() -> tuple[str, Revision | None, str, dict[str, str | None], Hardware]:
    return (_version("hscale") or "unknown", source_revision(), platform.python_version(),
            {name: _version(name) for name in RECORDED}, hardware())


def _version(distribution: str) -> str | None:
    import importlib.metadata

    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def source_revision(package: Path | None = None) -> Revision | None:
    """The git revision of hscale's source, when it runs from a repository (None for an
    installed wheel, or where git is missing or slow)."""
    here = package or Path(__file__).resolve().parents[1]
    if "site-packages" in here.parts or "dist-packages" in here.parts:
        return None  # a repository around a virtual environment is not hscale's
    if shutil.which("git") is None:
        return None
    commit = _git(here, "rev-parse", "HEAD")
    if not commit:
        return None
    changed = _git(here, "status", "--porcelain", "--untracked-files=no")
    diff = ""
    if changed:
        import hashlib

        patch = _git(here, "diff", "HEAD", strip=False) or ""
        diff = hashlib.sha256(patch.encode()).hexdigest()[:12]
    return Revision(commit=commit, dirty=bool(changed), diff=diff,
                    origin=_origin(_git(here, "config", "--get", "remote.origin.url") or ""))


def _git(where: Path, *args: str, strip: bool = True) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(where), *args], capture_output=True,
                              text=True, timeout=TIMEOUT_S, check=False,
                              env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"})
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.strip() if strip else done.stdout


def _origin(url: str) -> str:
    """The remote without credentials a URL may carry (https://user:token@host/...)."""
    return re.sub(r"(?<=://)[^/@]*@", "", url)


def hardware() -> Hardware:
    """This machine (GPUs from nvidia-smi where it exists, or from torch when this process
    has already imported it and started CUDA; never by importing it)."""
    gpus, driver, cuda = _nvidia()
    if not gpus:
        gpus, cuda = _torch_gpus()
    return Hardware(host=platform.node(), os=f"{platform.system()} {platform.release()}",
                    cpu=_cpu_model(), threads=os.cpu_count() or 0, memory_gib=_memory_gib(),
                    gpus=gpus, driver=driver, cuda=cuda)


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.startswith(("model name", "Hardware", "cpu model")):
                    return " ".join(line.split(":", 1)[1].split())
    except OSError:
        pass
    return platform.machine()


def _memory_gib() -> float | None:
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (AttributeError, OSError, ValueError):
        return None


def _nvidia() -> tuple[list[Gpu], str, str]:
    tool = shutil.which("nvidia-smi")
    if tool is None:
        return [], "", ""
    try:
        done = subprocess.run([tool, "--query-gpu=name,memory.total,driver_version",
                               "--format=csv,noheader,nounits"], capture_output=True,
                              text=True, timeout=TIMEOUT_S, check=False)
        header = subprocess.run([tool], capture_output=True, text=True, timeout=TIMEOUT_S,
                                check=False).stdout if done.returncode == 0 else ""
    except (OSError, subprocess.SubprocessError):
        return [], "", ""
    gpus, driver = [], ""
    for row in done.stdout.splitlines() if done.returncode == 0 else []:
        parts = [p.strip() for p in row.split(",")]
        if len(parts) >= 3 and parts[0]:
            gpus.append(Gpu(name=parts[0], memory_mib=int(parts[1])
                            if parts[1].isdecimal() else None))
            driver = parts[2]
    cuda = re.search(r"CUDA Version:\s*([\w.]+)", header)
    return gpus, driver, cuda[1] if cuda else ""


def _torch_gpus() -> tuple[list[Gpu], str]:
    torch = sys.modules.get("torch")
    try:
        if torch is None or not torch.cuda.is_initialized():
            return [], ""
        gpus = [Gpu(name=torch.cuda.get_device_name(i),
                    memory_mib=torch.cuda.get_device_properties(i).total_memory // 2**20)
                for i in range(torch.cuda.device_count())]
        return gpus, str(torch.version.cuda or "")
    except Exception:  # a broken CUDA setup says nothing here; the run itself will say
        return [], ""
