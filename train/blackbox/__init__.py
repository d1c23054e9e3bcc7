"""Black-box harnesses (Claude Code, Codex CLI, OpenClaw) against a model hscale serves: their
episodes played through the real CLIs (evaluation, and the embedded trainer's checkpoints), a
teacher's episodes collected (``hscale collect``) and read back as examples, and a black-box
SFT arm's fine-tune on them. Above ``serving``, which fronts the model for the CLIs.
"""

import lazy_loader as lazy

__getattr__, __dir__, __all__ = lazy.attach_stub(__name__, __file__)
