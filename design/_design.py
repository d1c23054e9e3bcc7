"""A Design: an integer array of configurations, the space it lives in, and how it was made."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from hscale.design._space import FactorSpace


@dataclass(frozen=True)
class Design:
    """Rows are runs (configurations), columns are the space's factors, entries level indices.

    ``method`` names the construction (e.g. ``addelman_kempthorne(q=3)[cols 0-4]``);
    ``strength`` is the verified strength (0 when the rows are not an orthogonal array).
    """

    array: np.ndarray
    space: FactorSpace
    method: str = "given"
    strength: int = 0
    notes: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        arr = self.space.validate(np.atleast_2d(np.asarray(self.array)))
        arr.setflags(write=False)
        object.__setattr__(self, "array", arr)

    @property
    def runs(self) -> int:
        return int(self.array.shape[0])

    @property
    def levels(self) -> tuple[int, ...]:
        return self.space.levels

    @property
    def labels(self) -> list[str]:
        return self.space.labels(self.array)

    @property
    def indices(self) -> np.ndarray:
        return self.array @ self.space.strides

    def __len__(self) -> int:
        return self.runs

    def __repr__(self) -> str:
        return (f"Design({self.runs} runs of {self.space.name}, strength {self.strength}, "
                f"method={self.method!r})")
