"""The public API of hscale.train.harness_s (read lazily by __init__.py)."""

from ._evolve import (
    Evolution as Evolution,
)
from ._evolve import (
    ModelEditor as ModelEditor,
)
from ._evolve import (
    ScriptedEditor as ScriptedEditor,
)
from ._pool import (
    read_pool as read_pool,
)
from ._pool import (
    with_pool as with_pool,
)
from ._pool import (
    write_pool as write_pool,
)
from ._profiles import (
    PROFILES as PROFILES,
)
from ._profiles import (
    PROFILES_ENV as PROFILES_ENV,
)
from ._routers import (
    ROUTERS as ROUTERS,
)
from ._routers import (
    Router as Router,
)
from ._routers import (
    RouterKind as RouterKind,
)
from ._routers import (
    require_judges as require_judges,
)

__all__ = [
    "Evolution",
    "ModelEditor",
    "PROFILES",
    "PROFILES_ENV",
    "ROUTERS",
    "Router",
    "RouterKind",
    "ScriptedEditor",
    "read_pool",
    "require_judges",
    "with_pool",
    "write_pool",
]
