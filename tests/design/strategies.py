"""Hypothesis strategies shared by the design tests."""

import numpy as np
from hypothesis import strategies as st


@st.composite
def level_arrays(draw, max_rows=12, max_cols=4, max_level=4):
    """(array, levels): random rows over 1..max_cols factors with 2..max_level levels."""
    k = draw(st.integers(1, max_cols))
    levels = draw(st.lists(st.integers(2, max_level), min_size=k, max_size=k))
    n = draw(st.integers(2, max_rows))
    cols = [draw(st.lists(st.integers(0, s - 1), min_size=n, max_size=n)) for s in levels]
    return np.array(cols, dtype=np.int64).T, levels
