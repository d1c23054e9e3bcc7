"""Result files written atomically, so a killed run never leaves half a parquet file."""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd

from design.io import atomic_write_bytes


def write_parquet(path: str | Path, frame: pd.DataFrame) -> None:
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    atomic_write_bytes(path, buffer.getvalue())
