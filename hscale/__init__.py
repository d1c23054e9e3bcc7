"""Project-wide pieces every hscale package shares, and the command line.

- :mod:`hscale.errors`: the user-facing error and how the CLI turns any error into one line;
- :mod:`hscale.files`: atomic writes, so a killed process never leaves half a file;
- :mod:`hscale.text`: what may reach a terminal (another program's escape sequences never do);
- :mod:`hscale.web`: local servers that answer only their own origin;
- :mod:`hscale.lazy`: a package's names from heavy modules, imported on first use;
- :mod:`hscale.registry`: variants registered by name, with did-you-mean lookups;
- :mod:`hscale.journal`: append-only rows that survive their writer being killed;
- :mod:`hscale.yamlio`: a user's YAML read safely, errors naming the file and line;
- :mod:`hscale.contracts`: the file contracts between stages, which every writer and reader imports;
- :mod:`hscale.cli`: the ``hscale`` command, composed lazily from one module per command group.

Nothing here imports numpy, pandas or torch at module level.
"""

__all__: list[str] = []
