"""Project-wide pieces every hscale package shares, and the command line.

- :mod:`hscale.errors`: the user-facing error and how the CLI turns any error into one line;
- :mod:`hscale.files`: atomic writes, so a killed process never leaves half a file;
- :mod:`hscale.lazy`: lazy package exports, so ``import design`` and ``hscale --help`` stay fast;
- :mod:`hscale.registry`: variants registered by name, with did-you-mean lookups;
- :mod:`hscale.cli`: the ``hscale`` command, composed lazily from one module per command group.

Nothing here imports numpy, pandas or torch at module level.
"""

__all__: list[str] = []
