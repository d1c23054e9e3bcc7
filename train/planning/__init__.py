"""Planning, and what a planned run plays: specs into manifests and schedules
(``hscale plan``), and the one plan every driver consumes (:class:`RunPlan`:
every training and evaluated episode, the router), and the one writer of a run's result
files (:class:`Recorder`), to which every driver hands what it played.
"""

import lazy_loader as lazy

__getattr__, __dir__, __all__ = lazy.attach_stub(__name__, __file__)
