"""Names for the tree strategy a deployed model was really compiled with (models.strategy),
under the class paths Hummingbird's tests compare `type(model._operators[0])` with."""


class _TreeImpl:
    def __init__(self, strategy):
        self.strategy = strategy  # as the server reports it


class GEMMDecisionTreeImpl(_TreeImpl): pass
class TreeTraversalDecisionTreeImpl(_TreeImpl): pass
class PerfectTreeTraversalDecisionTreeImpl(_TreeImpl): pass
class GEMMGBDTImpl(_TreeImpl): pass
class TreeTraversalGBDTImpl(_TreeImpl): pass
class PerfectTreeTraversalGBDTImpl(_TreeImpl): pass
class NativeTreeImpl(_TreeImpl): pass  # pg_predict's own kernel: no Hummingbird counterpart
