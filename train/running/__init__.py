"""Running, the top of train/'s stack: the runner (the only writer of status.json), an
evaluation-only run of a model (``hscale evaluate``: :func:`evaluate`), a finished run run again
and compared with its folder (``hscale rerun``: :func:`rerun`), and the contract suite a
backend of your own proves itself with (:class:`BackendContract`).
"""

import lazy_loader as lazy

__getattr__, __dir__, __all__ = lazy.attach_stub(__name__, __file__)
