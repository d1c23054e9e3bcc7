"""The public API of hscale.design (read lazily by __init__.py)."""

from ._arrays import (
    foldover as foldover,
)
from ._arrays import (
    full_factorial as full_factorial,
)
from ._arrays import (
    replicate as replicate,
)
from ._bounds import (
    bose_bush_bound as bose_bush_bound,
)
from ._bounds import (
    bush_bound as bush_bound,
)
from ._bounds import (
    divisor as divisor,
)
from ._bounds import (
    elementary_symmetric as elementary_symmetric,
)
from ._bounds import (
    feasibility as feasibility,
)
from ._bounds import (
    max_factors as max_factors,
)
from ._bounds import (
    rao_bound as rao_bound,
)
from ._bounds import (
    smallest_runs as smallest_runs,
)
from ._choose import (
    candidates as candidates,
)
from ._choose import (
    normalize_to_contain as normalize_to_contain,
)
from ._choose import (
    place as place,
)
from ._criteria import (
    covering_radius as covering_radius,
)
from ._criteria import (
    distance_distribution as distance_distribution,
)
from ._criteria import (
    distance_range as distance_range,
)
from ._criteria import (
    gwlp as gwlp,
)
from ._criteria import (
    min_distance as min_distance,
)
from ._design import (
    Design as Design,
)
from ._enumeration import (
    enumerate_oas as enumerate_oas,
)
from ._enumeration import (
    enumeration_refusal as enumeration_refusal,
)
from ._errors import (
    InfeasibleError as InfeasibleError,
)
from ._errors import (
    NotConstructedError as NotConstructedError,
)
from ._hamming import (
    distance_matrix as distance_matrix,
)
from ._hamming import (
    hamming_graph as hamming_graph,
)
from ._hamming import (
    k_nearest as k_nearest,
)
from ._hamming import (
    neighbours as neighbours,
)
from ._hamming import (
    tie_key as tie_key,
)
from ._io import (
    check_array_target as check_array_target,
)
from ._io import (
    read_array as read_array,
)
from ._io import (
    write_array as write_array,
)
from ._isomorphism import (
    are_isomorphic as are_isomorphic,
)
from ._isomorphism import (
    classify as classify,
)
from ._numbers import (
    shown as shown,
)
from ._oa import (
    best_orthogonal_array as best_orthogonal_array,
)
from ._oa import (
    orthogonal_array as orthogonal_array,
)
from ._recipes import (
    RECIPES as RECIPES,
)
from ._recipes import (
    eval_set as eval_set,
)
from ._recipes import (
    first_order as first_order,
)
from ._recipes import (
    full as full,
)
from ._recipes import (
    random_n as random_n,
)
from ._recipes import (
    recipe as recipe,
)
from ._recipes import (
    single as single,
)
from ._recipes import (
    structured as structured,
)
from ._search import (
    difference_scheme as difference_scheme,
)
from ._space import (
    Factor as Factor,
)
from ._space import (
    FactorSpace as FactorSpace,
)
from ._space import (
    format_levels as format_levels,
)
from ._space import (
    parse_levels as parse_levels,
)
from ._verify import (
    balance_table as balance_table,
)
from ._verify import (
    check_strength as check_strength,
)
from ._verify import (
    is_orthogonal as is_orthogonal,
)
from ._verify import (
    strength as strength,
)
from ._weights import (
    TIE_DECIMALS as TIE_DECIMALS,
)
from ._weights import (
    WeightError as WeightError,
)
from ._weights import (
    by_name as by_name,
)
from ._weights import (
    parse_weights as parse_weights,
)
from ._weights import (
    resolve_weights as resolve_weights,
)

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
