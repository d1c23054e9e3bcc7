"""veRL backend: a planned run becomes veRL 0.9.1 inputs and a launch script (inputs), checked
on CPU against veRL's own config (overrides), launched here (launch) or as a Ray job (the
runner's Ray executor), and its validation dumps become eval.parquet (dumps). veRL, Hydra,
torch and Ray are imported lazily.
"""

import lazy_loader as lazy

__getattr__, __dir__, __all__ = lazy.attach_stub(__name__, __file__)
