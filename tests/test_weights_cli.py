"""``hscale design neighbours --weights``: weighted neighbourhoods, run as a user runs them."""

from __future__ import annotations

from tests.test_cli import assert_user_error, hscale


def test_weighted_neighbours_are_listed_nearest_first_with_their_distance():
    result = hscale("design", "neighbours", "S0-T0-O0-C0-W0", "--radius", "1.2", "--within",
                    "--weights", "context=2,S=0.5")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == ("9 configurations within weighted distance 1.2 of S0-T0-O0-C0-W0 "
                        "(weights S 0.455, T 0.909, O 0.909, C 1.82, W 0.909):")
    assert lines[1:4] == ["  S0-T0-O0-C0-W0  0", "  S1-T0-O0-C0-W0  0.455",
                          "  S2-T0-O0-C0-W0  0.455"]
    assert not any("-C1-" in line or "-C2-" in line for line in lines)  # C weighs 1.82 > 1.2


def test_equal_weights_list_the_plain_neighbourhood(tmp_path):
    plain = hscale("design", "neighbours", "S0-T1-O2-C0-W1", "--radius", "2")
    snippet = tmp_path / "weights.yaml"
    snippet.write_text("weights: {S: 2, T: 2, O: 2, C: 2, W: 2}\n")
    equal = hscale("design", "neighbours", "S0-T1-O2-C0-W1", "--radius", "2",
                   "--weights", str(snippet))
    assert plain.returncode == equal.returncode == 0
    assert equal.stdout == plain.stdout and plain.stdout.startswith("40 configurations at")


def test_bad_weights_and_radii_are_one_line():
    base = ("design", "neighbours", "S0-T0-O0-C0-W0")
    assert_user_error(hscale(*base, "--weights", "contxt=2"), "did you mean 'context'")
    assert_user_error(hscale(*base, "--weights", "C=-1"), "positive")
    assert_user_error(hscale(*base, "--weights", "C"), "NAME=WEIGHT")
    assert_user_error(hscale(*base, "--weights", "missing.yaml"), "missing.yaml")
    assert_user_error(hscale(*base, "--radius", "1.5"), "needs --weights")
    assert_user_error(hscale(*base, "--radius", "-1", "--weights", "C=2"), ">= 0")
