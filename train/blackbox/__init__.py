"""Black-box harnesses (Claude Code, Codex CLI, OpenClaw) against a model hscale serves: their
episodes played through the real CLIs (evaluation, and the embedded trainer's checkpoints), a
teacher's episodes collected (``hscale collect``) and read back as examples, and a black-box
SFT arm's fine-tune on them. Above ``serving``, which fronts the model for the CLIs.
"""

from ._arm import (
    MODEL,
    SFT_DIR,
    collect_teacher,
    fine_tuned,
    sft_rows,
    teacher_samples,
)
from ._collect import (
    Collection,
    collect,
)
from ._eval import (
    check_context,
    play_clis,
    played,
)
from ._sft import (
    RESULT,
    fine_tune,
)
from ._trajectories import (
    EpisodeLog,
    samples,
)

__all__ = [
    "Collection",
    "EpisodeLog",
    "MODEL",
    "RESULT",
    "SFT_DIR",
    "check_context",
    "collect",
    "collect_teacher",
    "fine_tune",
    "fine_tuned",
    "play_clis",
    "played",
    "samples",
    "sft_rows",
    "teacher_samples",
]
