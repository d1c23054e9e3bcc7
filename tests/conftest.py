"""Shared test configuration: ``slow`` tests run only when asked for (``--runslow``, or a
``-m`` expression naming them, as ``-m slow`` in CI's second step); ``gpu`` tests are skipped
unless CUDA is available; base models built by tests go to a per-session cache, never the
user's."""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest


@pytest.fixture(scope="session", autouse=True)
def _model_cache(tmp_path_factory):
    """One cache a test run, shared by its xdist workers (models are written atomically, so
    two workers building the same one at once waste time, never corrupt it)."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    cache = root / "hscale-cache"
    cache.mkdir(exist_ok=True)
    # the black-box harnesses a user (or CI) installed stay where they are: 1.5 GB of npm
    # internal: finds the black-box harness files
    from hscale.harness._blackbox import harness_root

    os.environ.setdefault("HSCALE_HARNESSES", str(harness_root()))
    os.environ["HSCALE_CACHE"] = str(cache)


def _cuda_available() -> bool:
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return bool(torch.cuda.is_available())


# What each slow test took when last recorded. The slow tests' files start longest first
# (CI hands whole files to its workers in this order: --dist loadfile --no-loadscope-reorder),
# so the workers end together rather than one of them starting the 8 minutes of veRL's
# main_ppo last; a file stays whole, so its module fixtures are built once. Refresh with
# --record-durations.
DURATIONS = Path(__file__).with_name("durations.json")


def pytest_addoption(parser):
    parser.addoption("--runslow", action="store_true",
                     help="also run the tests marked slow (CI runs them as a second step)")
    parser.addoption("--record-durations", action="store_true",
                     help=f"record what each slow test run took (over 1 s) in {DURATIONS.name}")


def _slow_wanted(config) -> bool:
    return config.getoption("--runslow") or "slow" in (config.getoption("-m") or "")


def pytest_collection_modifyitems(config, items):
    if not _slow_wanted(config):
        slow = [item for item in items if "slow" in item.keywords]
        if slow:
            config.hook.pytest_deselected(items=slow)
            items[:] = [item for item in items if "slow" not in item.keywords]
    elif DURATIONS.exists():  # files longest first, each file's tests in their order
        files: dict[str, float] = {}
        for test, took in json.loads(DURATIONS.read_text()).items():
            path = test.split("::")[0]
            files[path] = files.get(path, 0.0) + took
        items.sort(key=lambda item: -files.get(item.nodeid.split("::")[0], 0.0))
    if any("gpu" in item.keywords for item in items) and not _cuda_available():
        skip = pytest.mark.skip(reason="needs a CUDA device")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)


_took: dict[str, float] = {}


def pytest_runtest_logreport(report):
    """Sums each test's setup, call and teardown (on xdist's controller, which sees them all)."""
    if "slow" in report.keywords:
        _took[report.nodeid] = _took.get(report.nodeid, 0.0) + report.duration


def pytest_sessionfinish(session):
    if session.config.getoption("--record-durations") and not os.environ.get(
            "PYTEST_XDIST_WORKER"):
        known = json.loads(DURATIONS.read_text()) if DURATIONS.exists() else {}
        known.update({test: round(took, 1) for test, took in _took.items()})
        DURATIONS.write_text(json.dumps(
            {test: took for test, took in sorted(known.items()) if took > 1}, indent=0) + "\n")


def _hypothesis_profiles() -> None:
    """CI runs the property tests on a fixed seed (a landing never fails on a draw it has not
    seen before); a developer's run draws afresh, which is where new failures are found."""
    from hypothesis import settings

    settings.register_profile("ci", derandomize=True)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


_hypothesis_profiles()
