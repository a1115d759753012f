"""IsolationForest's strategy names (see _tree_implementations.py)."""

from .._tree_implementations import _TreeImpl


class GEMMIsolationForestImpl(_TreeImpl): pass
class TreeTraversalIsolationForestImpl(_TreeImpl): pass
class PerfectTreeTraversalIsolationForestImpl(_TreeImpl): pass
