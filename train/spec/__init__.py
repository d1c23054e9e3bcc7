"""An experiment spec: the YAML a study is written in, validated (its arms, harness
space, veRL and black-box sections, sweeps), and ``--quick``'s smaller one.
"""

import lazy_loader as lazy

__getattr__, __dir__, __all__ = lazy.attach_stub(__name__, __file__)
