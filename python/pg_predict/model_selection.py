"""Model-selection wrappers: GridSearchCV and RandomizedSearchCV (and their successive-halving
variants) predict with the
`best_estimator_` they refit on the whole training set, so that estimator (a model or a whole
Pipeline) is exported in their place. The `*CV` linear models (RidgeCV, LogisticRegressionCV,
...) are plain linear models once fitted: they are in linear.py."""

from ._common import Context

SEARCHES = ("GridSearchCV", "RandomizedSearchCV", "HalvingGridSearchCV", "HalvingRandomSearchCV")


def unwrap(est, ctx=None):
    """The estimator a search predicts with (nested searches too); anything else as is."""
    while type(est).__name__ in SEARCHES:
        ctx = ctx or Context([])
        if est.refit is False:
            ctx.refuse(est, "refit", "without refit a search keeps no best_estimator_ and "
                       "cannot predict; fit it with refit=True (the default) or fit "
                       "best_params_ into an estimator and export that")
        best = getattr(est, "best_estimator_", None)
        if best is None:
            ctx.refuse(est, "refit", "it has no best_estimator_ (is it fitted?)")
        est = best
    return est
