"""Containment for untrusted checker processes, the way systems that run untrusted code do it:
a reward script starts in namespaces of its own (PID, network, mount, IPC, UTS), so it sees
no other process (not the runner's ``/proc/PID/environ``, not a process it could stop or
join), reaches no network (not even the host's loopback), and sees the file system read-only
but for its workspace and its scratch folder, with ``/sys`` (the cgroup files) masked; it
holds no capabilities and cannot gain any (no_new_privs), so it cannot join or leave a
namespace or a cgroup; when its sandbox's first process ends, the kernel ends every process
in it. The runner, outside, is the watchdog: nothing inside can signal it.

Which containment this machine gives is probed once a process, strongest first:

- ``bubblewrap``: the ``bwrap`` program (Debian's ``bubblewrap`` package), as root or where
  user namespaces are allowed;
- ``namespaces``: the same from util-linux's ``unshare``, ``mount`` and ``setpriv`` (the
  kernel calls themselves, where bubblewrap is absent);
- ``limits``: neither works here (no privileges, no user namespaces): resource limits, a
  session and a pids cgroup only, as ``hscale doctor`` then says.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

# What a contained process may not do, as ``hscale doctor`` says it.
STRONG = ("own PID, network, mount, IPC and UTS namespaces; no capabilities; a read-only "
          "system but its workspace; /sys masked")

# The namespaces path, run by the sandbox's first process (PID 1 of its PID namespace): make
# every mount read-only in the new mount namespace, mask /sys, give back the writable
# folders, then run the command with every capability dropped for good, as its child (so the
# command is no init: its signals act as anywhere else) and exit with its status (128 + N
# for a signal, as bubblewrap does).
_PRELUDE = r"""
mount --make-rprivate / 2>/dev/null
while read -r _ point _; do
  case "$point" in *\\*) continue ;; esac
  mount -o remount,bind,ro "$point" 2>/dev/null
done < /proc/self/mounts
mount -o remount,bind,ro / 2>/dev/null
mount -t tmpfs -o ro,nosuid,nodev,noexec hscale-masked /sys 2>/dev/null || exit 125
while [ "$1" != "--" ]; do
  mount --bind "$1" "$1" && mount -o remount,bind,rw "$1" || exit 125
  shift
done
shift
setpriv --no-new-privs --inh-caps=-all --ambient-caps=-all --bounding-set=-all -- "$@"
exit $?
"""


@dataclass(frozen=True)
class Containment:
    """How this machine contains a checker: ``kind`` (bubblewrap, namespaces or limits) and
    the line ``hscale doctor`` shows."""

    kind: str
    line: str
    prefix: tuple[str, ...] = ()

    @property
    def strong(self) -> bool:
        return self.kind != "limits"

    def returncode(self, code: int) -> int:
        """A contained command's exit status as the command's own: the sandbox reports a
        command killed by signal N as 128 + N, here -N as ``subprocess`` does."""
        if self.strong and 128 < code < 128 + 65:
            return -(code - 128)
        return code

    @property
    def mounts(self) -> bool:
        """Whether a folder can be shown at another path inside (``wrap``'s ``mounts``)."""
        return self.kind == "bubblewrap"

    def wrap(self, cmd: Sequence[str], writable: Sequence[Path], cwd: Path | str,
             mounts: dict[str, Path] | None = None) -> list[str]:
        """``cmd`` as it runs contained, ``writable`` folders writable, started in ``cwd``;
        ``mounts`` shows each host folder (writable) at its path inside (bubblewrap only:
        where ``mounts`` is False, callers map paths instead)."""
        folders = [str(Path(p).resolve()) for p in writable]
        mounts = mounts or {}
        if mounts and not self.mounts:
            raise ValueError(f"{self.kind} containment cannot mount folders elsewhere")
        if self.kind == "bubblewrap":
            binds = [arg for p in folders for arg in ("--bind", p, p)]
            root = _assembled_root(list(mounts)) if mounts else ["--ro-bind", "/", "/"]
            shown = [arg for inside, host in mounts.items()
                     for arg in ("--bind", str(Path(host).resolve()), inside)]
            return [*self.prefix, "--unshare-all", "--die-with-parent", "--new-session",
                    "--cap-drop", "ALL", *root, "--dev", "/dev", "--proc", "/proc",
                    "--tmpfs", "/sys", *binds, *shown,
                    *(["--remount-ro", "/"] if mounts else []), "--chdir", str(cwd),
                    "--", *cmd]
        if self.kind == "namespaces":
            return [*self.prefix, "sh", "-c", _PRELUDE, "hscale-jail", *folders, "--",
                    *_in(cwd, cmd)]
        return list(cmd)


_OWN = ("dev", "proc", "sys")  # made by bubblewrap itself


def _assembled_root(targets: list[str]) -> list[str]:
    """bubblewrap arguments for the host's file system, read-only, with room for folders at
    ``targets`` that may not exist on the host: a folder on the way to a target is not bound
    whole but entry by entry (bubblewrap's root is a tmpfs, so what is missing can be
    made), a target itself is left out (it is bound from elsewhere)."""
    wanted = [PurePosixPath(t) for t in targets]
    args: list[str] = []

    def level(folder: PurePosixPath) -> None:
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            return
        for name in names:
            path = folder / name
            if folder == PurePosixPath("/") and name in _OWN:
                continue
            if path in wanted:
                continue
            host = Path(path)
            on_the_way = any(path in t.parents for t in wanted)
            if host.is_symlink():
                args.extend(["--symlink", os.readlink(host), str(path)])
            elif on_the_way and host.is_dir():
                level(path)
            else:
                args.extend(["--ro-bind", str(path), str(path)])

    level(PurePosixPath("/"))
    return args


def _in(cwd: Path, cmd: Sequence[str]) -> list[str]:
    """``cmd`` started from ``cwd`` (setpriv keeps the working folder the jail started in);
    the ``OLDPWD`` that ``cd`` sets is dropped, so the program's environment is exactly what
    it was given."""
    return ["sh", "-c", 'cd "$1" && unset OLDPWD && shift && exec "$@"', "hscale-cd",
            str(cwd), *cmd]


KINDS = ("bubblewrap", "namespaces", "limits")


def containment() -> Containment:
    """The strongest containment that works here, or the one ``HSCALE_CONTAINMENT`` names
    (bubblewrap, namespaces or limits) when it works."""
    wanted = os.environ.get("HSCALE_CONTAINMENT", "")
    return probe(wanted if wanted in KINDS else "")


@functools.cache
def probe(kind: str = "") -> Containment:
    """The strongest containment of ``kind`` (any, if empty) that works here, probed once a
    process: a contained process must start, find no capability, see no process outside its
    sandbox and write only where it may."""
    if kind == "limits":  # a user's explicit choice
        return _limits("HSCALE_CONTAINMENT=limits")
    tool = shutil.which("bwrap")
    if tool is not None and kind in ("", "bubblewrap"):
        for extra in ((), ("--unshare-user",)):
            found = Containment("bubblewrap", f"bubblewrap ({STRONG})", (tool, *extra))
            if _works(found):
                return found
    tools = [shutil.which(name) for name in ("unshare", "mount", "setpriv")]
    if all(tools) and kind in ("", "namespaces"):
        base = (tools[0], "--pid", "--fork", "--mount-proc", "--net", "--ipc", "--uts",
                "--mount", "--kill-child")
        for prefix in (base, (*base[:1], "--user", "--map-root-user", *base[1:])):
            found = Containment("namespaces", f"kernel namespaces ({STRONG})", prefix)
            if _works(found):
                return found
    if kind:
        return _limits(f"HSCALE_CONTAINMENT={kind} does not work here")
    return _limits("no bubblewrap, and this user cannot make namespaces (install "
                   "bubblewrap, or run as root)")


def _limits(why: str) -> Containment:
    return Containment("limits", f"resource limits, a session and a pids cgroup only: {why}")


def _works(found: Containment) -> bool:
    """A contained probe runs, has no capability, sees no process but its sandbox's, and can
    write its writable folder but not the rest."""
    with tempfile.TemporaryDirectory(prefix="hscale-jail-") as tmp:
        folder = Path(tmp)
        probe = ("grep -q '^CapEff:[[:space:]]*0*$' /proc/self/status"
                 f" && [ ! -e /proc/{os.getpid()} ]"
                 " && [ $(ls -d /proc/[0-9]* | wc -l) -le 8 ]"
                 " && echo ok > probe && ! touch /hscale-jail-probe 2>/dev/null")
        try:
            done = subprocess.run(found.wrap(["sh", "-c", probe], [folder], folder),
                                  capture_output=True, timeout=20, cwd=folder,
                                  env={"PATH": os.environ.get("PATH") or os.defpath})
        except (OSError, subprocess.SubprocessError):
            return False
        return done.returncode == 0 and (folder / "probe").is_file()
