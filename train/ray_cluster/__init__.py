"""Ray as an executor: the runs of any backend on a Ray cluster, each followed from a thread
of the runner, which still decides what runs and writes every status.json.

A backend says how its runs travel (``Backend.ray``): as a Python task (the local backend's
embedded trainer: :mod:`.tasks`) or as a job's command line (veRL's launch.sh: :mod:`.jobs`).
Either way ``--ray-address`` names the same cluster: its dashboard (``http://HEAD:8265``),
its GCS (``HEAD:6379``), its Ray client (``ray://HEAD:10001``) or, for tasks, ``auto``.
Ray is imported lazily: ``hscale --help`` must not pay for it.
"""

from ._blackbox import play_on_ray
from ._executor import RayExecutor
from ._tasks import connect

__all__ = [
    "RayExecutor",
    "connect",
    "play_on_ray",
]
