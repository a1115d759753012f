"""Featurizer steps: each `export_<name>(est, sources, ctx)` returns (step or None, sources of
its output), where `sources` describes the vector the step reads (see Context)."""

import numbers

import numpy as np

from ._common import floats, optional_floats, to_json_number


def _categories(est, j, cats, source, ctx):
    """One column's categories: strings (a text input) or numbers."""
    values = list(cats)
    is_str = [isinstance(v, str) for v in values]
    if values and all(is_str):
        ctx.read_text(est, source, j)
        return values
    if any(is_str):
        bad = [v for v in values if not isinstance(v, str)]
        ctx.refuse(est, None, f"column {j} mixes string categories with {bad[:3]!r}: a missing "
                   "value among text categories is not supported (impute text columns first)")
    for v in values:
        if not isinstance(v, (numbers.Number, np.number)):
            ctx.refuse(est, None, f"column {j} has a category {v!r} that is neither a string "
                       "nor a number")
    ctx.read_numeric(est, [source])
    return [to_json_number(v) for v in values]


def export_one_hot_encoder(est, sources, ctx):
    handle_unknown = est.handle_unknown
    infrequent = getattr(est, "_infrequent_enabled", False)
    if handle_unknown == "infrequent_if_exist" and not infrequent:
        handle_unknown = "ignore"  # without infrequent categories it is 'ignore'
    if handle_unknown not in ("error", "ignore", "infrequent_if_exist"):
        ctx.refuse(est, "handle_unknown", "only 'error', 'ignore' and 'infrequent_if_exist' are "
                   "supported")
    categories = [_categories(est, j, c, s, ctx)
                  for j, (c, s) in enumerate(zip(est.categories_, sources))]
    # Per column the grouped categories: the frequent ones in order, then one for all the
    # infrequent ones (scikit-learn's output layout; drop_idx_ counts in it).
    grouped = [len(c) for c in categories]
    step = {"type": "OneHotEncoder", "categories": categories, "handle_unknown": handle_unknown}
    if infrequent:
        step["infrequent_categories"] = [
            None if idx is None else [categories[j][int(i)] for i in idx]
            for j, idx in enumerate(est._infrequent_indices)]
        grouped = [n if idx is None else n - len(idx) + 1
                   for n, idx in zip(grouped, est._infrequent_indices)]
    # 1.2 keeps the grouped index in drop_idx_; later versions in _drop_idx_after_grouping.
    drop_idx = getattr(est, "_drop_idx_after_grouping", est.drop_idx_)
    if drop_idx is not None:
        drop_idx = [None if d is None else int(d) for d in drop_idx]
    step["drop_idx"] = drop_idx
    width = sum(n - (0 if drop_idx is None or drop_idx[j] is None else 1)
                for j, n in enumerate(grouped))
    return step, [None] * width


def export_ordinal_encoder(est, sources, ctx):
    if est.handle_unknown not in ("error", "use_encoded_value"):
        ctx.refuse(est, "handle_unknown", "only 'error' and 'use_encoded_value' are supported")
    categories = [_categories(est, j, c, s, ctx)
                  for j, (c, s) in enumerate(zip(est.categories_, sources))]
    step = {"type": "OrdinalEncoder", "categories": categories,
            "handle_unknown": est.handle_unknown,
            "unknown_value": (None if est.unknown_value is None
                              else to_json_number(est.unknown_value))}
    missing = getattr(est, "encoded_missing_value", np.nan)
    if any(c == "NaN" for cats in categories for c in cats):
        # A NaN seen at fit time is encoded as encoded_missing_value, not as its index.
        step["encoded_missing_value"] = to_json_number(missing)
    return step, [None] * len(sources)


def export_label_encoder(est, sources, ctx):
    """A LabelEncoder on its own (fitted on y, one column): an ordinal encoding over classes_
    that refuses a label it was not fitted on, as LabelEncoder.transform does."""
    if len(sources) != 1:
        ctx.refuse(est, None, f"it encodes one column, the vector it reads has {len(sources)}")
    categories = [_categories(est, 0, est.classes_, sources[0], ctx)]
    return ({"type": "OrdinalEncoder", "categories": categories, "handle_unknown": "error",
             "unknown_value": None}, [None])


def _missing_values(est, ctx):
    """missing_values as the document writes it: None for NaN (SQL NULL), else a finite number
    (a NULL is missing too, where scikit-learn refuses NaN)."""
    mv = est.missing_values
    if isinstance(mv, numbers.Number) and not isinstance(mv, bool):
        if np.isnan(mv):
            return None
        if np.isfinite(mv):
            return float(mv)
    ctx.refuse(est, "missing_values", f"{mv!r} is not supported (np.nan, i.e. SQL NULL, or a "
               "finite number)")


def export_simple_imputer(est, sources, ctx):
    mv = _missing_values(est, ctx)
    if est.add_indicator:
        ctx.refuse(est, "add_indicator", "the missing-value indicator columns are not supported")
    stats = list(est.statistics_)
    out = []
    for j, (v, s) in enumerate(zip(stats, sources)):
        if isinstance(v, str):
            ctx.read_text(est, s, j)
            out.append(v)
            continue
        if v is None or (isinstance(v, (float, np.floating)) and np.isnan(v)):
            if est.strategy != "constant" and not getattr(est, "keep_empty_features", False):
                ctx.refuse(est, "keep_empty_features",
                           f"column {j} was entirely missing at fit time, so scikit-learn drops "
                           "it from the output; refit with keep_empty_features=True")
        ctx.read_numeric(est, [s])
        out.append(to_json_number(v) if v is not None else "NaN")
    step = {"type": "SimpleImputer", "statistics": out}
    if mv is not None:
        if any(isinstance(v, str) for v in stats):
            ctx.refuse(est, "missing_values", f"{mv!r} with text columns (only np.nan: NULL)")
        step["missing_values"] = mv
    # Imputing keeps a column's identity: a text input stays a text input.
    return step, list(sources)


def export_standard_scaler(est, sources, ctx):
    ctx.read_numeric(est, sources)
    mean = est.mean_ if est.with_mean else None
    scale = est.scale_ if est.with_std else None
    return ({"type": "StandardScaler", "mean": optional_floats(mean),
             "scale": optional_floats(scale)}, [None] * len(sources))


def export_min_max_scaler(est, sources, ctx):
    ctx.read_numeric(est, sources)
    step = {"type": "MinMaxScaler", "scale": floats(est.scale_), "min": floats(est.min_)}
    if getattr(est, "clip", False):  # the scaled values clipped to feature_range
        step["clip"] = True
        step["feature_range"] = [float(v) for v in est.feature_range]
    return step, [None] * len(sources)


def export_max_abs_scaler(est, sources, ctx):
    ctx.read_numeric(est, sources)
    return {"type": "MaxAbsScaler", "scale": floats(est.scale_)}, [None] * len(sources)


def export_robust_scaler(est, sources, ctx):
    ctx.read_numeric(est, sources)
    center = est.center_ if est.with_centering else None
    scale = est.scale_ if est.with_scaling else None
    return ({"type": "RobustScaler", "center": optional_floats(center),
             "scale": optional_floats(scale)}, [None] * len(sources))


# Element-wise numpy ufuncs a FunctionTransformer may apply (named by ufunc.__name__).
KNOWN_UFUNCS = frozenset("""
    absolute fabs negative sign reciprocal square sqrt cbrt exp exp2 expm1 log log2 log10 log1p
    floor ceil rint trunc sin cos tan arcsin arccos arctan sinh cosh tanh arcsinh arccosh arctanh
""".split())


def export_function_transformer(est, sources, ctx):
    func = est.func
    if func is None:
        return None, list(sources)  # the identity
    if est.kw_args:
        ctx.refuse(est, "kw_args", "arguments to the function are not supported")
    if not (isinstance(func, np.ufunc) and func.nin == 1 and func.nout == 1
            and func.__name__ in KNOWN_UFUNCS):
        name = getattr(func, "__name__", repr(func))
        ctx.refuse(est, "func", f"{name} is not a known element-wise numpy ufunc "
                   f"(known: {', '.join(sorted(KNOWN_UFUNCS))})")
    ctx.read_numeric(est, sources)
    return {"type": "FunctionTransformer", "func": func.__name__}, [None] * len(sources)


def export_selector(est, sources, ctx):
    """VarianceThreshold, SelectKBest, SelectPercentile, SelectFromModel, ...: a column selection."""
    columns = [int(i) for i in est.get_support(indices=True)]
    return {"type": "ColumnSelector", "columns": columns}, [sources[i] for i in columns]


def export_binarizer(est, sources, ctx):
    if not isinstance(est.threshold, numbers.Number):
        ctx.refuse(est, "threshold", "must be a number")
    ctx.read_numeric(est, sources)
    return ({"type": "Binarizer", "threshold": to_json_number(float(est.threshold))},
            [None] * len(sources))


def export_normalizer(est, sources, ctx):
    if est.norm not in ("l1", "l2", "max"):
        ctx.refuse(est, "norm", "only 'l1', 'l2' and 'max' are supported")
    ctx.read_numeric(est, sources)
    return {"type": "Normalizer", "norm": est.norm}, [None] * len(sources)


def export_missing_indicator(est, sources, ctx):
    mv = _missing_values(est, ctx)
    if est.sparse is True:
        ctx.refuse(est, "sparse", "sparse output is not supported")
    features = [int(i) for i in est.features_]
    ctx.read_numeric(est, [sources[i] for i in features])
    step = {"type": "MissingIndicator", "features": features}
    if mv is not None:
        step["missing_values"] = mv
    return step, [None] * len(features)


def export_pca(est, sources, ctx):
    ctx.read_numeric(est, sources)
    step = {"type": type(est).__name__, "components": [floats(r) for r in est.components_],
            "mean": optional_floats(getattr(est, "mean_", None)),
            "whiten": bool(getattr(est, "whiten", False))}
    if step["whiten"]:
        step["explained_variance"] = floats(est.explained_variance_)
    return step, [None] * est.components_.shape[0]


def export_fast_ica(est, sources, ctx):
    """transform() = (x - mean_) · components_ᵀ when whitened (any whiten of 1.2: True, 'warn',
    'arbitrary-variance', 'unit-variance'; the whitening is inside components_), x · components_ᵀ
    without."""
    ctx.read_numeric(est, sources)
    whiten = getattr(est, "_whiten", est.whiten)
    step = {"type": "FastICA", "components": [floats(r) for r in est.components_],
            "mean": optional_floats(est.mean_ if whiten else None), "whiten": False}
    return step, [None] * est.components_.shape[0]


def export_kernel_pca(est, sources, ctx):
    if est.kernel not in ("linear", "rbf", "poly", "sigmoid", "cosine", "precomputed"):
        name = est.kernel if isinstance(est.kernel, str) else getattr(est.kernel, "__name__", "a callable")
        ctx.refuse(est, "kernel", f"{name} is not supported (linear, rbf, poly, sigmoid, cosine, "
                   "precomputed are)")
    ctx.read_numeric(est, sources)
    # transform(): the centered kernel against X_fit_ times the eigenvectors over sqrt(eigenvalues).
    alphas = np.zeros_like(est.eigenvectors_)
    nz = np.flatnonzero(est.eigenvalues_)
    alphas[:, nz] = est.eigenvectors_[:, nz] / np.sqrt(est.eigenvalues_[nz])
    kernel, x_fit, steps = est.kernel, np.asarray(est.X_fit_, dtype=np.float64), []
    if kernel == "cosine":
        # cosine_similarity(X, X_fit) = the linear kernel of both L2-normalized (a zero row stays 0).
        norms = np.linalg.norm(x_fit, axis=1, keepdims=True)
        x_fit = x_fit / np.where(norms == 0, 1.0, norms)
        kernel, steps = "linear", [{"type": "Normalizer", "norm": "l2"}]
    elif kernel == "precomputed":
        # The input row is already the kernel against the training rows: the linear kernel
        # against the identity passes it on unchanged, and the centering applies as for any kernel.
        kernel, x_fit = "linear", np.eye(alphas.shape[0])
    gamma = est.gamma if est.gamma is not None else 1.0 / x_fit.shape[1]
    centerer = est._centerer
    steps.append({"type": "KernelPCA", "kernel": kernel, "gamma": float(gamma),
                  "degree": int(est.degree), "coef0": float(est.coef0),
                  "X_fit": [floats(r) for r in x_fit], "alphas": [floats(r) for r in alphas],
                  "K_fit_rows": floats(centerer.K_fit_rows_), "K_fit_all": float(centerer.K_fit_all_)})
    return steps, [None] * alphas.shape[1]


def export_kbins_discretizer(est, sources, ctx):
    if est.encode not in ("ordinal", "onehot", "onehot-dense"):
        ctx.refuse(est, "encode", "only 'ordinal', 'onehot' and 'onehot-dense' are supported")
    ctx.read_numeric(est, sources)
    edges = [floats(e) for e in est.bin_edges_]
    width = len(sources) if est.encode == "ordinal" else int(sum(est.n_bins_))
    return ({"type": "KBinsDiscretizer", "bin_edges": edges, "encode": est.encode},
            [None] * width)


def export_polynomial_features(est, sources, ctx):
    ctx.read_numeric(est, sources)
    powers = [[int(p) for p in row] for row in est.powers_]
    return {"type": "PolynomialFeatures", "powers": powers}, [None] * len(powers)


def export_power_transformer(est, sources, ctx):
    if est.method not in ("yeo-johnson", "box-cox"):
        ctx.refuse(est, "method", "only 'yeo-johnson' and 'box-cox' are supported")
    ctx.read_numeric(est, sources)
    step = {"type": "PowerTransformer", "method": est.method, "lambdas": floats(est.lambdas_),
            "mean": None, "scale": None}
    if est.standardize:  # the StandardScaler fitted on the transformed training data
        scaler = est._scaler
        step["mean"] = optional_floats(scaler.mean_ if scaler.with_mean else None)
        step["scale"] = optional_floats(scaler.scale_ if scaler.with_std else None)
    return step, [None] * len(sources)


def export_quantile_transformer(est, sources, ctx):
    if est.output_distribution not in ("uniform", "normal"):
        ctx.refuse(est, "output_distribution", "only 'uniform' and 'normal' are supported")
    if est.quantiles_.shape[0] < 2:
        ctx.refuse(est, "n_quantiles", "fitted on fewer than 2 quantiles")
    ctx.read_numeric(est, sources)
    return ({"type": "QuantileTransformer", "output_distribution": est.output_distribution,
             "quantiles": [floats(q) for q in est.quantiles_.T],
             "references": floats(est.references_)}, [None] * len(sources))


def export_spline_transformer(est, sources, ctx):
    """The fitted BSplines' knot vectors (bsplines_[i].t); the importer derives the per-interval
    polynomials. extrapolation='error' scores NaN (NULL after a model) beyond the knots, where
    scikit-learn raises."""
    if est.extrapolation not in ("constant", "linear", "continue", "periodic", "error"):
        ctx.refuse(est, "extrapolation", "only 'constant', 'linear', 'continue', 'periodic' and "
                   "'error' are supported")
    ctx.read_numeric(est, sources)
    knots = [floats(spl.t) for spl in est.bsplines_]
    for j, spl in enumerate(est.bsplines_):
        if not np.all(np.diff(spl.t) > 0):
            ctx.refuse(est, "knots", f"feature {j} has repeated knots (a column constant at fit "
                       "time): its splines are all zero in scikit-learn; drop the column first")
    n_splines = est.bsplines_[0].c.shape[1]
    step = {"type": "SplineTransformer", "degree": int(est.degree),
            "extrapolation": est.extrapolation, "include_bias": bool(est.include_bias),
            "knots": knots}
    return step, [None] * (len(sources) * (n_splines - (0 if est.include_bias else 1)))


FEATURIZERS = {
    "OneHotEncoder": export_one_hot_encoder,
    "OrdinalEncoder": export_ordinal_encoder,
    "SimpleImputer": export_simple_imputer,
    "StandardScaler": export_standard_scaler,
    "MinMaxScaler": export_min_max_scaler,
    "MaxAbsScaler": export_max_abs_scaler,
    "RobustScaler": export_robust_scaler,
    "FunctionTransformer": export_function_transformer,
    "VarianceThreshold": export_selector,
    "SelectKBest": export_selector,
    "SelectPercentile": export_selector,
    "SelectFromModel": export_selector,
    "Binarizer": export_binarizer,
    "Normalizer": export_normalizer,
    "MissingIndicator": export_missing_indicator,
    "PCA": export_pca,
    "TruncatedSVD": export_pca,
    "KBinsDiscretizer": export_kbins_discretizer,
    "PolynomialFeatures": export_polynomial_features,
    "PowerTransformer": export_power_transformer,
    "QuantileTransformer": export_quantile_transformer,
    "KernelPCA": export_kernel_pca,
    "LabelEncoder": export_label_encoder,
    "SplineTransformer": export_spline_transformer,
    "FastICA": export_fast_ica,
}
