"""Design of harness factor spaces: spaces, orthogonal arrays, bounds, criteria, neighbourhoods.

numpy, scipy, networkx and pyDOE3 only: importing ``design`` never pulls in torch or veRL.
Names are imported on first use, so ``import design`` and ``hscale --help`` stay fast.
"""

import lazy_loader as lazy

__getattr__, __dir__, __all__ = lazy.attach_stub(__name__, __file__)
