"""What a harness is: the harness space and its components, the task sources and the task
format, the sandboxed environment, the turn engine and its drivers (run_episode here; the
embedded sampler and the veRL agent loop elsewhere).

Names are imported on first use, so ``import hscale.harness._space`` (as analysis does) stays
light; heavy dependencies (torch, veRL) are imported only by the modules that use them.
"""

import lazy_loader as lazy

__getattr__, __dir__, __all__ = lazy.attach_stub(__name__, __file__)
