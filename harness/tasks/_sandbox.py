"""Running an untrusted reward script: contained, limited, watched, nothing left behind.

A reward script is task data, so it is treated like model output. It runs contained
(:mod:`hscale.harness.tasks._jail`: its own PID, network and mount namespaces, no
capabilities, the system read-only but for its writable folders) in a new session under
``setrlimit`` limits (address space, CPU time, file size, open files, core dumps and, for
non-root users, processes), with stdout and stderr in files (so
``RLIMIT_FSIZE`` also caps what it prints and a background child holding them cannot stall
the wait). Where the kernel lets this process create a ``pids`` cgroup (root on cgroup v1, or
a delegated v2 tree) the script also runs in one of its own: that caps processes even for
root, whom ``RLIMIT_NPROC`` does not bind. The runner is the watchdog: when the script ends
or runs past its time, its whole sandbox, process group and cgroup are SIGKILLed; nothing in
the sandbox can see or signal the runner. Where no containment works (``jail.containment``
says why), the script still runs in a network namespace of its own where ``unshare`` makes
one. A reward script reads what its own folder holds (read-only); what the agent wrote
reaches it only as files in the workspace and the answer file.

The limits and the cgroup are set by what the script is started through, before it runs:
``prlimit`` (util-linux) sets the limits and execs it, after ``sh`` has moved itself into the
cgroup. So the runner starts the script without a ``preexec_fn``, which lets Python start it
by ``vfork``: a worker holding torch otherwise copies its page tables on every fork (about
15 ms of CPU a script against 1). Where ``prlimit`` or ``sh`` is missing, a ``preexec_fn``
sets them, making only system calls prepared by the parent.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import math
import os
import resource
import select
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from hscale.harness.tasks._jail import containment

OUTPUT_TAIL_BYTES = 65536  # of stdout/stderr read back: the reward is the last line
STREAMS = ("stdout", "stderr")  # the output files in a run's scratch folder

_names = itertools.count()


@dataclass(frozen=True)
class ScriptLimits:
    """Per-script limits (besides the wall-clock timeout, which also sets the CPU limit)."""

    memory_bytes: int = 1 << 30  # RLIMIT_AS, per process
    processes: int = 64  # pids.max of its cgroup; RLIMIT_NPROC headroom for non-root users
    file_bytes: int = 8 << 20  # RLIMIT_FSIZE: any file it writes, its stdout/stderr too
    open_files: int = 256  # RLIMIT_NOFILE


@dataclass(frozen=True)
class Finished:
    """How a script ended: ``returncode`` is None when it ran past the timeout, negative when
    a signal (e.g. SIGXCPU, SIGXFSZ) killed it; the tails of what it printed."""

    returncode: int | None
    stdout: str
    stderr: str


def plain_env(scratch: Path) -> dict[str, str]:
    """The environment a contained program starts from, whatever the runner's holds: PATH,
    an empty HOME and TMPDIR of its own (made in ``scratch``), a UTF-8 locale."""
    (scratch / "home").mkdir(exist_ok=True)
    (scratch / "tmp").mkdir(exist_ok=True)
    return {"PATH": os.environ.get("PATH") or os.defpath, "HOME": str(scratch / "home"),
            "TMPDIR": str(scratch / "tmp"), "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}


def run_limited(cmd: Sequence[str], cwd: Path, env: dict[str, str], scratch: Path,
                timeout: float, limits: ScriptLimits | None = None,
                writable: Sequence[Path] = (), mounts: dict[str, Path] | None = None
                ) -> Finished:
    """Run ``cmd`` with exactly ``env``, contained and limited, from ``cwd``; ``scratch`` (a
    private folder) takes its output files and stays writable to it, as do ``writable``;
    ``mounts`` shows host folders at other paths inside (where ``jail.containment`` can).
    Everything it started is killed before this returns."""
    limits = limits or ScriptLimits()
    jail = containment()
    cmd = jail.wrap(cmd, [scratch, *writable], cwd, mounts) if jail.strong else \
        [*no_network_prefix(), *cmd]
    group = _new_cgroup(limits.processes)
    pairs, wrappers = _rlimits(timeout, limits), _wrappers()
    if wrappers:
        cmd = _wrapped(cmd, pairs, group, *wrappers)
    try:
        procs_fd = None if group is None or wrappers else \
            os.open(group / "cgroup.procs", os.O_WRONLY)
        try:
            with open(scratch / "stdout", "wb") as out, open(scratch / "stderr", "wb") as err:
                # a cwd inside a mount exists only in the jail (which moves there itself)
                proc = subprocess.Popen(
                    list(cmd), cwd=scratch if mounts else cwd, env=env,
                    stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True,
                    preexec_fn=None if wrappers else _preexec(pairs, procs_fd))
        finally:
            if procs_fd is not None:
                os.close(procs_fd)
        written: list[int | None] = [None, None]  # the output to show: all of it, or ...
        try:
            timed_out = not _wait_exit(proc.pid, timeout)
            if timed_out:  # ... what it wrote by its limit, not a shell's report of a kill
                written = [(scratch / name).stat().st_size for name in STREAMS]
        finally:
            _kill_all(proc.pid, group)  # before reaping the leader: its pid stays the group's
            proc.wait()
            _settle(proc.pid)
    finally:
        _remove_cgroup(group)
    stdout, stderr = (_tail(scratch / name, size)
                      for name, size in zip(STREAMS, written, strict=True))
    return Finished(None if timed_out else jail.returncode(proc.returncode), stdout, stderr)


@functools.cache
def no_network_prefix() -> tuple[str, ...]:
    """``unshare`` arguments that start a script in a network namespace of its own (no
    interface but a down loopback: no network at all), where this machine allows one (root,
    or unprivileged user namespaces); empty where it does not."""
    tool = shutil.which("unshare")
    if tool is None:
        return ()
    for prefix in ((tool, "--net"), (tool, "--user", "--map-root-user", "--net")):
        try:
            probe = subprocess.run([*prefix, "true"], capture_output=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            continue
        if probe.returncode == 0:
            return prefix
    return ()


def cgroup_available() -> bool:
    """Whether scripts run in a pids cgroup here (capped even for root; no child escapes)."""
    group = _new_cgroup(ScriptLimits().processes)
    _remove_cgroup(group)
    return group is not None


def processes_limited() -> bool:
    """Whether a script's process count is capped here (RLIMIT_NPROC binds, or a cgroup)."""
    return os.getuid() != 0 or cgroup_available()


# ------------------------------------------------------------------------------ limits
def _rlimits(timeout: float, limits: ScriptLimits) -> list[tuple[int, int]]:
    """(resource, value) pairs, each clamped to its current hard limit."""
    wanted = [(resource.RLIMIT_AS, limits.memory_bytes),
              (resource.RLIMIT_CPU, math.ceil(timeout) + 1),
              (resource.RLIMIT_FSIZE, limits.file_bytes),
              (resource.RLIMIT_NOFILE, limits.open_files),
              (resource.RLIMIT_CORE, 0)]
    if os.getuid() != 0:  # counted per user, so leave room for what the user already runs
        wanted.append((resource.RLIMIT_NPROC, _user_tasks() + limits.processes))
    pairs = []
    for res, value in wanted:
        hard = resource.getrlimit(res)[1]
        pairs.append((res, value if hard == resource.RLIM_INFINITY else min(value, hard)))
    return pairs


def _user_tasks() -> int:
    """Threads of this real user: what RLIMIT_NPROC counts."""
    uid, count = os.getuid(), 0
    for name in os.listdir("/proc"):
        if name.isdigit():
            with contextlib.suppress(OSError):
                if os.stat(f"/proc/{name}").st_uid == uid:
                    count += len(os.listdir(f"/proc/{name}/task"))
    return count


LIMIT_NAMES = {resource.RLIMIT_AS: "as", resource.RLIMIT_CPU: "cpu",
               resource.RLIMIT_FSIZE: "fsize", resource.RLIMIT_NOFILE: "nofile",
               resource.RLIMIT_CORE: "core", resource.RLIMIT_NPROC: "nproc"}


@functools.cache
def _wrappers() -> tuple[str, str] | None:
    """(sh, prlimit) where both are here: they then set the cgroup and the limits."""
    sh, prlimit = shutil.which("sh"), shutil.which("prlimit")
    return (sh, prlimit) if sh and prlimit else None


def _wrapped(cmd: Sequence[str], pairs: list[tuple[int, int]], group: Path | None, sh: str,
             prlimit: str) -> list[str]:
    """``cmd`` started through ``prlimit`` with ``pairs`` as soft and hard limits, and first
    through ``sh`` moving itself into ``group`` ("0": the writing process), where there is one;
    each execs the next, so the script keeps the process it was started as."""
    limited = [prlimit, *(f"--{LIMIT_NAMES[res]}={value}" for res, value in pairs), "--",
               *cmd]
    if group is None:
        return limited
    return [sh, "-c", 'echo 0 > "$0" && exec "$@"', str(group / "cgroup.procs"), *limited]


def _preexec(pairs: list[tuple[int, int]], procs_fd: int | None) -> Callable[[], None]:
    def apply() -> None:  # runs in the child between fork and exec
        if procs_fd is not None:
            os.write(procs_fd, b"0")  # "0": the writing process joins the cgroup
        for res, value in pairs:
            resource.setrlimit(res, (value, value))
    return apply


# ------------------------------------------------------------------------------ cgroups
def _cgroup_parents() -> list[Path]:
    """Cgroups of this process under which a child with a pids controller might be made."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        hierarchy, controllers, path = line.split(":", 2)
        if "pids" in controllers.split(","):  # v1
            found.insert(0, Path("/sys/fs/cgroup/pids") / path.lstrip("/"))
        elif hierarchy == "0" and Path("/sys/fs/cgroup/cgroup.controllers").is_file():  # v2
            found.append(Path("/sys/fs/cgroup") / path.lstrip("/"))
    return [parent for parent in found if (parent / "cgroup.procs").is_file()]


def _new_cgroup(max_pids: int) -> Path | None:
    """A new cgroup capped at ``max_pids`` tasks, or None where none can be made."""
    for parent in _cgroup_parents():
        group = parent / f"hscale-check-{os.getpid()}-{next(_names)}"
        try:
            group.mkdir()
        except OSError:
            continue
        try:  # no O_CREAT: the file exists only where the pids controller is on
            fd = os.open(group / "pids.max", os.O_WRONLY)
            try:
                os.write(fd, str(max_pids).encode())
            finally:
                os.close(fd)
            return group
        except OSError:
            _remove_cgroup(group)
    return None


def _kill_members(group: Path, leader: int) -> bool:
    """SIGKILL every member of ``group`` but the (unreaped) leader; False when none is left."""
    try:
        pids = {int(pid) for pid in (group / "cgroup.procs").read_text().split()} - {leader}
    except OSError:
        return False
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return bool(pids)


def _remove_cgroup(group: Path | None) -> None:
    """Remove an emptied cgroup (a few tries: killed members leave it asynchronously)."""
    if group is None:
        return
    for _ in range(50):
        try:
            group.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            _kill_members(group, 0)
            time.sleep(0.002)


# ------------------------------------------------------------------------------ processes
def _wait_exit(pid: int, timeout: float) -> bool:
    """Wait until ``pid`` exits, without reaping it; False when ``timeout`` passes first. A
    pidfd wakes the wait the moment it exits; polling (where there is none) may add up to
    20 ms to each script."""
    with contextlib.suppress(OSError, AttributeError):
        fd = os.pidfd_open(pid)
        try:
            poller = select.poll()
            poller.register(fd, select.POLLIN)
            return bool(poller.poll(max(timeout, 0.0) * 1000))
        finally:
            os.close(fd)
    deadline, delay = time.monotonic() + timeout, 0.0005
    while os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(delay, left))
        delay = min(delay * 2, 0.02)
    return True


def _kill_all(leader: int, group: Path | None) -> None:
    """SIGKILL the script's process group, and its cgroup until no member is left."""
    with contextlib.suppress(OSError):
        os.killpg(leader, signal.SIGKILL)
    deadline = time.monotonic() + 1.0
    while group is not None and _kill_members(group, leader) and time.monotonic() < deadline:
        time.sleep(0.001)


def _settle(pgid: int) -> None:
    """Wait (at most a second) until the killed group has no member that is not a zombie."""
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except OSError:
            return
        if _only_zombies(pgid):
            return
        time.sleep(0.001)


def _only_zombies(pgid: int) -> bool:
    """Whether every process left in process group ``pgid`` is a zombie (init reaps those)."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            fields = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] not in "ZX":
            return False
    return True


def _tail(path: Path, size: int | None = None) -> str:
    """The end of an output file, up to its first ``size`` bytes where given."""
    with open(path, "rb") as handle:
        end = handle.seek(0, os.SEEK_END) if size is None else size
        handle.seek(max(0, end - OUTPUT_TAIL_BYTES))
        return handle.read(end - handle.tell()).decode("utf-8", errors="replace")
