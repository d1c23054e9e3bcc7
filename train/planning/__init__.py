"""Planning, and what a planned run plays: specs into manifests and schedules
(``hscale plan``), and the one plan every driver consumes (:class:`RunPlan`:
every training and evaluated episode, the router, the rows).
"""

import lazy_loader as lazy

__getattr__, __dir__, __all__ = lazy.attach_stub(__name__, __file__)
