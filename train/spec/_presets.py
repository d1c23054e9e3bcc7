"""The embedded trainer's base models by name, readable without torch: a spec's ``model`` is
checked against them at validation, so they sit here, below the trainer that builds them."""

from __future__ import annotations

from hscale.errors import HscaleError

# Presets a manifest's ``model`` may name. ``warm_start`` sets the demonstrations and SFT.
PRESETS: dict[str, dict] = {
    "hscale-tiny": {
        "model": {"d_model": 64, "n_layers": 2, "n_heads": 4, "max_positions": 384},
        "warm_start": {"episodes": 8000, "steps": 3000, "batch": 48, "lr": 3e-3,
                       "warmup": 50, "seed": 0},
    },
    # for tests: seconds, not minutes; it is a weak policy
    "hscale-test": {
        "model": {"d_model": 32, "n_layers": 1, "n_heads": 2, "max_positions": 384},
        "warm_start": {"episodes": 300, "steps": 60, "batch": 32, "lr": 3e-3,
                       "warmup": 10, "seed": 0},
    },
}

def preset(name: str) -> dict:
    if name not in PRESETS:
        raise HscaleError(f"unknown embedded model {name!r}",
                          f"use one of {', '.join(PRESETS)} in the spec's model field")
    return PRESETS[name]


__all__ = ["PRESETS", "preset"]
