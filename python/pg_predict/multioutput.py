"""Multi-output wrappers: `export_<name>(est, n_features, ctx)` returns the model step.

MultiOutputRegressor holds one fitted regressor per target (`estimators_`), each reading the
row. RegressorChain's `estimators_` are in chain order: member j reads the row followed by the
predictions of members 0..j-1 and predicts target `order_[j]`. Each member is exported as a
model of its own (any regressor export() knows, not a Pipeline); the document's `outputs` is
their number."""


def _regressors():
    from . import linear, neighbors, neural, svm, trees
    return {**linear.REGRESSORS, **trees.REGRESSORS, **neural.REGRESSORS, **svm.REGRESSORS,
            **neighbors.REGRESSORS}


def _members(est, n_features, ctx, chain):
    regressors = _regressors()
    steps = []
    for j, member in enumerate(est.estimators_):
        kind = type(member).__name__
        if kind not in regressors:
            ctx.refuse(est, "estimator", f"its member {kind} is not a regressor pg_predict scores "
                       f"(supported: {', '.join(sorted(regressors))})")
        step = regressors[kind](member, n_features + (j if chain else 0), ctx)
        if step.get("n_outputs", 1) != 1:
            ctx.refuse(est, "estimator", f"its member {kind} predicts several targets")
        steps.append(step)
    return steps


def export_multi_output_regressor(est, n_features, ctx):
    members = _members(est, n_features, ctx, chain=False)
    return {"type": "MultiOutputRegressor", "n_outputs": len(members), "estimators": members}


def export_regressor_chain(est, n_features, ctx):
    from . import trees
    for member in est.estimators_:
        if type(member).__name__ in trees.REGRESSORS:
            ctx.refuse(est, "base_estimator", f"its members are {type(member).__name__}s: a tree "
                       "ensemble ends a program, it cannot feed its prediction to a later member "
                       "(MultiOutputRegressor can hold trees)")
    members = _members(est, n_features, ctx, chain=True)
    return {"type": "RegressorChain", "n_outputs": len(members),
            "order": [int(i) for i in est.order_], "estimators": members}


REGRESSORS = {"MultiOutputRegressor": export_multi_output_regressor,
              "RegressorChain": export_regressor_chain}
