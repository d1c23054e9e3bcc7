"""The public API of hscale.train.blackbox (read lazily by __init__.py)."""

from ._arm import (
    MODEL as MODEL,
)
from ._arm import (
    SFT_DIR as SFT_DIR,
)
from ._arm import (
    collect_teacher as collect_teacher,
)
from ._arm import (
    fine_tuned as fine_tuned,
)
from ._arm import (
    sft_rows as sft_rows,
)
from ._arm import (
    teacher_samples as teacher_samples,
)
from ._collect import (
    Collection as Collection,
)
from ._collect import (
    collect as collect,
)
from ._eval import (
    check_context as check_context,
)
from ._eval import (
    play_clis as play_clis,
)
from ._eval import (
    played as played,
)
from ._sft import (
    RESULT as RESULT,
)
from ._sft import (
    fine_tune as fine_tune,
)
from ._trajectories import (
    EpisodeLog as EpisodeLog,
)
from ._trajectories import (
    samples as samples,
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
