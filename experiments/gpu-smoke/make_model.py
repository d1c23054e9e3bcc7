"""A small local model folder for the GPU smoke run: a randomly initialised Qwen2-shaped model
(nothing to download) with a byte-level tokenizer and a chat template, the one veRL's CPU
tests train (hscale.train.backends.verl.cpu.model: a plain character vocabulary loses its
whitespace when veRL loads it with transformers 5). It learns nothing useful in a few steps;
it exercises every piece veRL runs."""

from __future__ import annotations

import sys
from pathlib import Path

from hscale.train.backends.verl.cpu.model import tiny_model


def make(folder: Path) -> Path:
    return tiny_model(folder, hidden=256, layers=2)


if __name__ == "__main__":
    print(make(Path(sys.argv[1] if len(sys.argv) > 1 else "runs/gpu-smoke-model")))
