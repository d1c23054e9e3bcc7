"""Results analysis: load run folders, Pass@k tables in the papers' layouts, statistics with
training runs and tasks as sources of variance (one model for intervals, tests, MDEs and
power, checked on planted studies), plots, and the ``hscale report`` HTML report.

Names are imported on first use, so ``import analysis`` does not pull in matplotlib, scipy
or statsmodels.
"""

import lazy_loader as lazy

__getattr__, __dir__, __all__ = lazy.attach_stub(__name__, __file__)
