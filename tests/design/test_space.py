import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hscale.design import Factor, FactorSpace, format_levels, parse_levels
from hscale.errors import HscaleError
from hscale.harness import factor_space

level_lists = st.lists(st.integers(2, 6), min_size=1, max_size=7)


def test_shorthand():
    assert parse_levels("3^5") == (3,) * 5
    assert parse_levels("2^1,3^7") == (2,) + (3,) * 7
    assert parse_levels("2, 3,3") == (2, 3, 3)
    assert format_levels((2, 3, 3, 3)) == "2^1,3^3"


@pytest.mark.parametrize("bad", ["", "3^", "x^2", "1^3", "3^5;2", "0"])
def test_bad_shorthand_names_the_part(bad):
    with pytest.raises(HscaleError) as err:
        parse_levels(bad)
    assert err.value.hint or "level" in err.value.message


@given(level_lists)
def test_format_parse_round_trip(levels):
    assert parse_levels(format_levels(levels)) == tuple(levels)


def test_harness_space_is_the_papers():
    space = factor_space()
    assert space.names == ("S", "T", "O", "C", "W")
    assert space.levels == (3,) * 5 and space.size == 243
    cfg = space.parse_label("S0-T1-O2-C0-W1")
    assert cfg.tolist() == [0, 1, 2, 0, 1]
    assert space.label(cfg) == "S0-T1-O2-C0-W1"
    assert space.label(space.base) == "S0-T0-O0-C0-W0"
    assert space.level_name(1, 0) == "json_call"


@given(level_lists, st.data())
def test_index_config_label_round_trip(levels, data):
    space = FactorSpace.from_levels(levels)
    idx = data.draw(st.integers(0, space.size - 1))
    cfg = space.from_index(idx)
    assert space.to_index(cfg) == idx
    assert np.array_equal(space.parse_label(space.label(cfg)), cfg)


@settings(deadline=None)
@given(st.lists(st.integers(2, 5), min_size=1, max_size=5))
def test_enumeration_is_index_order_and_complete(levels):
    space = FactorSpace.from_levels(levels)
    configs = space.all_configs()
    assert len(configs) == space.size == int(np.prod(levels))
    assert np.array_equal(space.to_index(configs), np.arange(space.size))
    assert np.array_equal(configs, np.array(list(np.ndindex(*levels))))
    chunks = np.concatenate(list(space.iter_configs(chunk=7)))
    assert np.array_equal(chunks, configs)


def test_huge_space_size_and_membership_without_enumeration():
    space = FactorSpace.from_levels("3^60")
    assert space.size == 3**60
    assert space.contains([2] * 60) and [2] * 60 in space
    assert not space.contains([3] + [0] * 59)
    assert not space.contains([0] * 59)
    with pytest.raises(HscaleError, match="too many"):
        space.all_configs()
    with pytest.raises(HscaleError, match="too many"):
        space.to_index([0] * 60)


@pytest.mark.parametrize("label", ["S0-T1-O2-C0", "S0-T1-O3-C0-W1", "S0-X1-O2-C0-W1", "junk"])
def test_bad_labels(label):
    space = factor_space()
    with pytest.raises(HscaleError):
        space.parse_label(label)
    assert not space.contains(label)


def test_factor_validation():
    with pytest.raises(HscaleError, match="digits"):
        Factor("S1", ("a", "b"))
    with pytest.raises(HscaleError, match="at least 2"):
        Factor("S", ("a",))
    with pytest.raises(HscaleError, match="repeat"):
        FactorSpace((Factor("S", ("a", "b")), Factor("S", ("c", "d"))))


def test_the_product_of_the_limits_is_bounded_before_allocating():
    """10000^10000 passes the per-factor limits; its 10^8 level names must not be built."""
    import time

    start = time.perf_counter()
    for text in ("10000^10000", "2^" + "9" * 5000, "9" * 5000, ",".join(["2"] * 10_001)):
        with pytest.raises(HscaleError):
            parse_levels(text)
        with pytest.raises(HscaleError):
            FactorSpace.from_levels(text)
    assert time.perf_counter() - start < 2
    assert parse_levels("10^10000") == (10,) * 10_000  # 100,000 levels: the limit itself
    with pytest.raises(HscaleError, match="100000 levels"):
        parse_levels("11^10000")


@pytest.mark.parametrize("levels", [[3.0, 3], ["3", "3"], [True, 3], "٣^5", "３^5", "3^1_0",
                                    b"3^5", 5])
def test_levels_are_integers_or_ascii_shorthand(levels):
    with pytest.raises(HscaleError):
        parse_levels(levels)


def test_a_space_built_from_factors_has_the_same_limits():
    two = ("a", "b")
    many = tuple(Factor("F" + "".join(chr(65 + int(d)) for d in str(i)), two)
                 for i in range(10_001))
    with pytest.raises(HscaleError, match="10001 factors"):
        FactorSpace(many)
    with pytest.raises(HscaleError, match="more than hscale handles"):
        Factor("S", tuple(str(i) for i in range(10_001)))


def test_materialising_configurations_is_bounded(monkeypatch):
    # internal: tests the space module's limits
    import hscale.design._space as space_module

    space = FactorSpace.from_levels("2^1000")
    with pytest.raises(HscaleError, match=r"about 10\^301 configurations"):
        space.all_configs()
    wide = FactorSpace.from_levels("2^60")
    with pytest.raises(HscaleError, match="more than hscale holds"):
        wide.from_index(np.arange(1_000_000))
    with pytest.raises(HscaleError, match="out of range"):
        wide.from_index(10**30)
    monkeypatch.setattr(space_module, "MAX_CONFIG_CELLS", 1000)
    chunk = next(FactorSpace.from_levels("2^20,3^5").iter_configs(chunk=10**9))
    assert chunk.shape == (40, 25)
