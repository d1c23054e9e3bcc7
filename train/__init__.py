"""Running experiments: specs into manifests and schedules, manifests into results.

``ExperimentSpec`` (validated YAML) -> ``Manifest`` (resolved, hashed; the file contracts live
in :mod:`hscale.contracts`) + ``Schedule`` (step -> [(task, harness)]) -> a ``Backend`` (local
embedded trainer, veRL, scripted) driven by the runner. Names are imported on first use, so
reading a manifest never imports torch.

The subpackages are a stack, lowest first; each uses only those below it
(tests/test_imports.py fails on any import up the stack):

1. ``harness_s``: Harness-S pools and routers;
2. ``spec``: the experiment spec, read and checked, and the names it may use (models,
   assignment modes, backends);
3. ``planning``: manifests, schedules and what a run plays;
4. ``policy``: the embedded policy (TinyGPT), its checkpoints and the presets' base models;
5. ``lm``: chat models (the embedded policy, Hugging Face, endpoints) and the turn driver;
6. ``serving``: ``hscale serve``, the OpenAI/Anthropic wire over an ``lm`` model;
7. ``blackbox``: the real CLIs played against a served model, a teacher's episodes collected,
   a black-box SFT arm's fine-tune;
8. ``embedded``: the CPU trainer (GRPO/PPO on the embedded policy);
9. ``backends``: one run on a backend, and what a backend needs installed;
10. ``ray_cluster``: runs (and black-box episodes) on a Ray cluster;
11. ``running``: the runner, the only writer of status.json, and ``hscale evaluate``'s run.
"""

from typing import TYPE_CHECKING

from hscale.lazy import on_first_use

if TYPE_CHECKING:  # numpy, pandas, pydantic, pytest: imported on first use
    from .backends import BACKENDS, Backend, get_backend
    from .harness_s import ROUTERS, Router
    from .planning import EvalJob, RunPlan, Schedule, plan, write_plan
    from .running import BackendContract, ExportContract, run_experiment
    from .spec import ASSIGNMENTS, ExperimentSpec, load_spec

__all__ = [
    "ASSIGNMENTS",
    "BACKENDS",
    "Backend",
    "BackendContract",
    "EvalJob",
    "ExperimentSpec",
    "ExportContract",
    "ROUTERS",
    "Router",
    "RunPlan",
    "Schedule",
    "get_backend",
    "load_spec",
    "plan",
    "run_experiment",
    "write_plan",
]

__getattr__ = on_first_use(__name__, __file__)
