"""Design of harness factor spaces: spaces, orthogonal arrays, bounds, criteria, neighbourhoods.

numpy, scipy, networkx and pyDOE3 only: importing ``design`` never pulls in torch or veRL.
Names are imported on first use, so ``import design`` and ``hscale --help`` stay fast.
"""

from typing import TYPE_CHECKING

from hscale.lazy import on_first_use

from ._errors import InfeasibleError, NotConstructedError

if TYPE_CHECKING:  # networkx, numpy: imported on first use
    from ._arrays import foldover, full_factorial, replicate
    from ._bounds import (
        bose_bush_bound,
        bush_bound,
        divisor,
        elementary_symmetric,
        feasibility,
        max_factors,
        rao_bound,
        smallest_runs,
    )
    from ._choose import candidates, normalize_to_contain, place
    from ._criteria import (
        covering_radius,
        distance_distribution,
        distance_range,
        gwlp,
        min_distance,
    )
    from ._design import Design
    from ._enumeration import enumerate_oas, enumeration_refusal
    from ._hamming import distance_matrix, hamming_graph, k_nearest, neighbours, tie_key
    from ._io import check_array_target, read_array, write_array
    from ._isomorphism import are_isomorphic, classify
    from ._numbers import shown
    from ._oa import best_orthogonal_array, orthogonal_array
    from ._recipes import (
        RECIPES,
        eval_set,
        first_order,
        full,
        random_n,
        recipe,
        single,
        structured,
    )
    from ._search import difference_scheme
    from ._space import Factor, FactorSpace, format_levels, parse_levels
    from ._verify import balance_table, check_strength, is_orthogonal, strength
    from ._weights import TIE_DECIMALS, WeightError, by_name, parse_weights, resolve_weights

__all__ = [
    "Design",
    "Factor",
    "FactorSpace",
    "InfeasibleError",
    "NotConstructedError",
    "RECIPES",
    "TIE_DECIMALS",
    "WeightError",
    "are_isomorphic",
    "balance_table",
    "bose_bush_bound",
    "bush_bound",
    "by_name",
    "best_orthogonal_array",
    "candidates",
    "check_array_target",
    "check_strength",
    "classify",
    "covering_radius",
    "difference_scheme",
    "distance_distribution",
    "distance_matrix",
    "distance_range",
    "divisor",
    "elementary_symmetric",
    "enumerate_oas",
    "enumeration_refusal",
    "eval_set",
    "feasibility",
    "first_order",
    "foldover",
    "format_levels",
    "full",
    "full_factorial",
    "gwlp",
    "hamming_graph",
    "is_orthogonal",
    "k_nearest",
    "max_factors",
    "min_distance",
    "neighbours",
    "normalize_to_contain",
    "orthogonal_array",
    "parse_levels",
    "parse_weights",
    "place",
    "random_n",
    "rao_bound",
    "read_array",
    "recipe",
    "replicate",
    "resolve_weights",
    "shown",
    "single",
    "smallest_runs",
    "strength",
    "structured",
    "tie_key",
    "write_array",
]

__getattr__ = on_first_use(__name__, __file__)
