"""What veRL imports (``VERL_USE_EXTERNAL_MODULES=hscale.train.backends.verl.cpu.plugin``) in every
process: registers the CPU platform, veRL's FSDP engines for it and the ``hscale_hf``
rollout, and in a veRL worker process joins the gloo process group (see
:func:`hscale.train.backends.verl.cpu.platform.join_worker_process_group`)."""

from __future__ import annotations

from hscale.train.backends.verl.cpu.platform import join_worker_process_group, register_engines
from hscale.train.backends.verl.cpu.rollout import register

register()
register_engines()
join_worker_process_group()
