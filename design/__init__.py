"""Design of harness factor spaces: spaces, orthogonal arrays, bounds, criteria, neighbourhoods.

numpy, scipy, networkx and pyDOE3 only: importing ``design`` never pulls in torch or veRL.
Names are imported on first use, so ``import design`` and ``hscale --help`` stay fast.
"""

from __future__ import annotations

from hscale.lazy import lazy_exports

_EXPORTS = {
    "bose_bush_bound": "design.bounds",
    "bush_bound": "design.bounds",
    "divisor": "design.bounds",
    "feasibility": "design.bounds",
    "max_factors": "design.bounds",
    "rao_bound": "design.bounds",
    "smallest_runs": "design.bounds",
    "candidates": "design.choose",
    "normalize_to_contain": "design.choose",
    "place": "design.choose",
    "covering_radius": "design.criteria",
    "distance_distribution": "design.criteria",
    "distance_range": "design.criteria",
    "gwlp": "design.criteria",
    "Design": "design.design",
    "InfeasibleError": "design.errors",
    "NotConstructedError": "design.errors",
    "distance_matrix": "design.hamming",
    "hamming_graph": "design.hamming",
    "k_nearest": "design.hamming",
    "neighbours": "design.hamming",
    "read_array": "design.io",
    "write_array": "design.io",
    "are_isomorphic": "design.isomorphism",
    "classify": "design.isomorphism",
    "enumerate_oas": "design.enumeration",
    "enumeration_refusal": "design.enumeration",
    "orthogonal_array": "design.oa",
    "difference_scheme": "design.search",
    "RECIPES": "design.recipes",
    "eval_set": "design.recipes",
    "first_order": "design.recipes",
    "full": "design.recipes",
    "random_n": "design.recipes",
    "recipe": "design.recipes",
    "single": "design.recipes",
    "structured": "design.recipes",
    "Factor": "design.space",
    "FactorSpace": "design.space",
    "format_levels": "design.space",
    "harness_space": "design.space",
    "parse_levels": "design.space",
    "balance_table": "design.verify",
    "check_strength": "design.verify",
    "is_orthogonal": "design.verify",
    "strength": "design.verify",
    "WeightError": "design.weights",
    "parse_weights": "design.weights",
    "resolve_weights": "design.weights",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
