"""PyTorch's module-level functions (``nbgrad.exp``, ``nbgrad.matmul``, ``nbgrad.finfo``...),
by job, re-exported by ``nbgrad`` as ``torch`` exports them.

    math.py         pointwise math, comparisons, bitwise and logical ops, NumPy-style aliases
    reductions.py   reductions, scans, sorting, histograms, searchsorted
    linalg.py       products: matmul, addmm, einsum, kron, cdist, cov...
    shapes.py       views, stacks, splits, flips, broadcasting
    indexing.py     gather, scatter, index_*, masked_*, take, put
    types.py        asarray, finfo, promote_types, the predicates, anomaly-mode switches
    random.py       Generator and the generator's state; bernoulli, multinomial, poisson...
    out.py          the ``out=`` keyword (NOTE [out=])
"""

from . import indexing, linalg, math, random, reductions, shapes, types
from .indexing import *  # noqa: F401,F403
from .linalg import *  # noqa: F401,F403
from .math import *  # noqa: F401,F403
from .random import *  # noqa: F401,F403
from .reductions import *  # noqa: F401,F403
from .shapes import *  # noqa: F401,F403
from .types import *  # noqa: F401,F403

__all__ = [
    *math.__all__,
    *reductions.__all__,
    *linalg.__all__,
    *shapes.__all__,
    *indexing.__all__,
    *types.__all__,
    *random.__all__,
]
