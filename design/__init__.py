"""Design of harness factor spaces: spaces, orthogonal arrays, bounds, criteria, neighbourhoods.

numpy, scipy, networkx and pyDOE3 only: importing ``design`` never pulls in torch or veRL.
Names are imported on first use, so ``import design`` and ``hscale --help`` stay fast.
"""

from __future__ import annotations

from hscale.lazy import lazy_exports

_EXPORTS = {
    "bose_bush_bound": "hscale.design.bounds",
    "bush_bound": "hscale.design.bounds",
    "divisor": "hscale.design.bounds",
    "feasibility": "hscale.design.bounds",
    "max_factors": "hscale.design.bounds",
    "rao_bound": "hscale.design.bounds",
    "smallest_runs": "hscale.design.bounds",
    "candidates": "hscale.design.choose",
    "normalize_to_contain": "hscale.design.choose",
    "place": "hscale.design.choose",
    "covering_radius": "hscale.design.criteria",
    "distance_distribution": "hscale.design.criteria",
    "distance_range": "hscale.design.criteria",
    "gwlp": "hscale.design.criteria",
    "Design": "hscale.design.design",
    "InfeasibleError": "hscale.design.errors",
    "NotConstructedError": "hscale.design.errors",
    "distance_matrix": "hscale.design.hamming",
    "hamming_graph": "hscale.design.hamming",
    "k_nearest": "hscale.design.hamming",
    "neighbours": "hscale.design.hamming",
    "read_array": "hscale.design.io",
    "write_array": "hscale.design.io",
    "are_isomorphic": "hscale.design.isomorphism",
    "classify": "hscale.design.isomorphism",
    "enumerate_oas": "hscale.design.enumeration",
    "enumeration_refusal": "hscale.design.enumeration",
    "orthogonal_array": "hscale.design.oa",
    "difference_scheme": "hscale.design.search",
    "RECIPES": "hscale.design.recipes",
    "eval_set": "hscale.design.recipes",
    "first_order": "hscale.design.recipes",
    "full": "hscale.design.recipes",
    "random_n": "hscale.design.recipes",
    "recipe": "hscale.design.recipes",
    "single": "hscale.design.recipes",
    "structured": "hscale.design.recipes",
    "Factor": "hscale.design.space",
    "FactorSpace": "hscale.design.space",
    "format_levels": "hscale.design.space",
    "parse_levels": "hscale.design.space",
    "balance_table": "hscale.design.verify",
    "check_strength": "hscale.design.verify",
    "is_orthogonal": "hscale.design.verify",
    "strength": "hscale.design.verify",
    "WeightError": "hscale.design.weights",
    "parse_weights": "hscale.design.weights",
    "resolve_weights": "hscale.design.weights",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
