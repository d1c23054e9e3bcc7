"""Shared test configuration: ``gpu`` tests are skipped unless CUDA is available; base models
built by tests go to a per-session cache, never the user's."""

from __future__ import annotations

import importlib.util
import os

import pytest


@pytest.fixture(scope="session", autouse=True)
def _model_cache(tmp_path_factory):
    os.environ["HSCALE_CACHE"] = str(tmp_path_factory.mktemp("hscale-cache"))


def _cuda_available() -> bool:
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return bool(torch.cuda.is_available())


def pytest_collection_modifyitems(config, items):
    if any("gpu" in item.keywords for item in items) and not _cuda_available():
        skip = pytest.mark.skip(reason="needs a CUDA device")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)
