"""The words the project compares against are typed, in one home (hscale.contracts): every
evaluation setting has its label, order and (when reported) a spec builder; the spec's and
study.json's setting words are the headline settings; error strings parse back to their
kinds; and no analysis module or report spells a setting or verdict word again."""

from __future__ import annotations

import re
from typing import get_args

from hypothesis import given
from hypothesis import strategies as st

# internal: the function every verdict's word comes from, checked to return members
from hscale.analysis._verdicts import word_for
from hscale.contracts import (
    HEADLINE_SETTINGS,
    SETTINGS,
    ErrorKind,
    Finding,
    HypothesisRecord,
    PaperFit,
    Setting,
    errors_of,
    join_errors,
)

# internal: the registry of spec builders is planning's own, checked against Setting here
from hscale.train.planning._manifest import SETTING_BUILDERS
from hscale.train.spec import Hypothesis
from tests.test_imports import modules


def test_every_setting_has_a_label_an_order_and_a_builder_when_reported():
    assert tuple(Setting) == SETTINGS
    assert sorted(s.order for s in Setting) == list(range(len(Setting)))
    assert all(s.label and s.label != s.value or s is Setting.POOL for s in Setting)
    assert {s for s in Setting if s.reported} == set(SETTING_BUILDERS)
    assert set(HEADLINE_SETTINGS) <= set(SETTING_BUILDERS)


def test_the_specs_and_study_records_setting_words_are_the_headline_settings():
    for model in (Hypothesis, HypothesisRecord):
        assert set(get_args(model.model_fields["setting"].annotation)) == set(HEADLINE_SETTINGS)


def test_a_setting_member_is_its_word_in_frames_files_and_dicts():
    import pandas as pd

    frame = pd.DataFrame({"setting": ["in_space", "base"]})
    assert frame["setting"].isin([Setting.IN_SPACE]).tolist() == [True, False]
    assert {Setting.BASE: 1}.get("base") == 1 and f"{Setting.OUT_OF_SPACE}" == "out_of_space"


@given(st.lists(st.tuples(st.sampled_from(list(ErrorKind)),
                          st.text(st.characters(blacklist_characters=";"), min_size=1,
                                  max_size=20)), max_size=4))
def test_an_error_string_parses_back_to_its_kinds(parts):
    error = join_errors(*(kind.line(text) for kind, text in parts))
    found = errors_of(error)
    assert set(found) == {kind for kind, _ in parts}
    for kind in found:  # the first line of each kind
        assert found[kind] == next(t for k, t in parts if k is kind)
    assert (ErrorKind.CHECKER in found) == any(k is ErrorKind.CHECKER for k, _ in parts)


def test_a_line_of_no_known_kind_is_the_policys():
    assert errors_of("ValueError: bad reply") == {ErrorKind.POLICY: "ValueError: bad reply"}
    assert errors_of("") == {}


def test_verdicts_are_members():
    assert word_for(3.0, 1.0, 5.0) is Finding.HIGHER
    assert word_for(3.0, -1.0, 5.0, [2.0]) is Finding.NOT_RESOLVED
    assert word_for(-3.0, -5.0, -1.0, [2.0]) is Finding.OPPOSITE
    assert PaperFit("") is PaperFit.NONE


WORDS = re.compile(r"[\"'](in_space|out_of_space|neighbours|consistent|mixed|not resolved|"
                   r"reproduces|opposite)[\"']")


def test_no_analysis_module_spells_a_setting_or_verdict_word():
    """Analysis compares against hscale.contracts' members; a word spelled again is a
    comparison that silently stops matching when the word changes."""
    found = [f"{name}:{n}" for name, path in modules().items() if name.startswith(
        ("hscale.analysis", "hscale.cli")) for n, line in enumerate(
        path.read_text().splitlines(), 1) if WORDS.search(line)
        and "@app.command" not in line]
    assert found == []
