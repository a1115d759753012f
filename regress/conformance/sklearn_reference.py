"""A plain NumPy evaluator of the sklearn format document (src/spec/SKLEARN_FORMAT.md), for the
tests only: it checks that what python/pg_predict writes means what scikit-learn computes,
before (and independently of) the C++ importer.

    predict, proba = evaluate(doc, {"age": floats, "city": strings_or_None, ...})
"""

import numpy as np
import scipy.special
import scipy.stats


def _num(v):
    if isinstance(v, str):
        return {"NaN": np.nan, "Infinity": np.inf, "-Infinity": -np.inf}[v]
    return np.nan if v is None else float(v)


def _arr(a):
    if isinstance(a, list):
        return np.array([_arr(x) for x in a], dtype=np.float64) if a and isinstance(a[0], list) \
            else np.array([_num(x) for x in a], dtype=np.float64)
    return _num(a)


def _is_missing(v):
    return v is None or (isinstance(v, float) and np.isnan(v))


def _match(cats, v):
    for i, c in enumerate(cats):
        if isinstance(c, str) and c == "NaN" and not isinstance(v, str):
            if _is_missing(v):
                return i
        elif isinstance(c, str) and isinstance(v, str):
            if c == v:
                return i
        elif not isinstance(c, str) and not isinstance(v, str) and not _is_missing(v):
            if float(c) == float(v):
                return i
    return -1


def _one_hot(step, cols):
    """Per column one 0/1 per grouped category: the frequent categories in order, then one for
    the infrequent ones (and, with handle_unknown 'infrequent_if_exist', the unknown values);
    drop_idx counts in that grouped order."""
    out = []
    drop = step.get("drop_idx")
    infrequent = step.get("infrequent_categories") or [None] * len(cols)
    for j, (cats, rare, x) in enumerate(zip(step["categories"], infrequent, cols)):
        rare_idx = [] if rare is None else [_match(cats, v) for v in rare]
        frequent = [k for k in range(len(cats)) if k not in rare_idx]
        group = {k: g for g, k in enumerate(frequent)}
        group.update({k: len(frequent) for k in rare_idx})
        width = len(frequent) + (1 if rare_idx else 0)
        block = np.zeros((len(x), width))
        for r, v in enumerate(x):
            i = _match(cats, v)
            if i < 0:
                if step["handle_unknown"] == "error":
                    raise ValueError(f"unknown category {v!r}")
                if step["handle_unknown"] == "infrequent_if_exist" and rare_idx:
                    block[r, len(frequent)] = 1.0
                continue
            block[r, group[i]] = 1.0
        keep = [k for k in range(width) if drop is None or drop[j] is None or k != drop[j]]
        out += [block[:, k] for k in keep]
    return out


def _ordinal(step, cols):
    out = []
    for cats, x in zip(step["categories"], cols):
        y = np.empty(len(x))
        for r, v in enumerate(x):
            i = _match(cats, v)
            if i >= 0 and isinstance(cats[i], str) and cats[i] == "NaN":
                y[r] = _num(step.get("encoded_missing_value", "NaN"))
            elif i >= 0:
                y[r] = i
            elif step["handle_unknown"] == "error":
                raise ValueError(f"unknown category {v!r}")
            else:
                y[r] = _num(step["unknown_value"])
        out.append(y)
    return out


def _imputer(step, cols):
    out = []
    for stat, x in zip(step["statistics"], cols):
        if isinstance(stat, str) and stat not in ("NaN", "Infinity", "-Infinity"):
            out.append(np.array([stat if _is_missing(v) else v for v in x], dtype=object))
        else:
            x = np.asarray(x, dtype=np.float64)
            out.append(np.where(_missing(step, x), _num(stat), x))
    return out


def _missing(step, x):
    """SimpleImputer's / MissingIndicator's missing values: NaN, or also missing_values."""
    mv = step.get("missing_values")
    return np.isnan(x) if mv is None else np.isnan(x) | (x == _num(mv))


def _elementwise(cols, f):
    return [f(np.asarray(x, dtype=np.float64), j) for j, x in enumerate(cols)]


def _weighted(part, cols):
    """transformer_weights: the part's output times its weight."""
    if "weight" not in part:
        return cols
    return [np.asarray(c, dtype=np.float64) * _num(part["weight"]) for c in cols]


def _apply(step, cols):
    t = step["type"]
    if t == "ColumnTransformer":
        out = []
        parts = list(step["transformers"]) + ([step["remainder"]] if step["remainder"] else [])
        for part in parts:
            out += _weighted(part, _apply_steps(part["steps"], [cols[i] for i in part["columns"]]))
        return out
    if t == "FeatureUnion":
        out = []
        for part in step["transformers"]:
            out += _weighted(part, _apply_steps(part["steps"], cols))
        return out
    if t == "StandardScaler":
        mean = None if step["mean"] is None else _arr(step["mean"])
        scale = None if step["scale"] is None else _arr(step["scale"])
        return _elementwise(cols, lambda x, j: (x - (0 if mean is None else mean[j]))
                            / (1 if scale is None else scale[j]))
    if t == "MinMaxScaler":
        scale, mn = _arr(step["scale"]), _arr(step["min"])
        lo, hi = step["feature_range"] if step.get("clip") else (-np.inf, np.inf)
        return _elementwise(cols, lambda x, j: np.clip(x * scale[j] + mn[j], lo, hi))
    if t == "MaxAbsScaler":
        scale = _arr(step["scale"])
        return _elementwise(cols, lambda x, j: x / scale[j])
    if t == "RobustScaler":
        center = None if step["center"] is None else _arr(step["center"])
        scale = None if step["scale"] is None else _arr(step["scale"])
        return _elementwise(cols, lambda x, j: (x - (0 if center is None else center[j]))
                            / (1 if scale is None else scale[j]))
    if t == "SimpleImputer":
        return _imputer(step, cols)
    if t == "OneHotEncoder":
        return _one_hot(step, cols)
    if t == "OrdinalEncoder":
        return _ordinal(step, cols)
    if t == "FunctionTransformer":
        f = getattr(np, step["func"])
        return _elementwise(cols, lambda x, j: f(x))
    if t == "ColumnSelector":
        return [cols[i] for i in step["columns"]]
    if t == "Binarizer":
        thr = _num(step["threshold"])
        return _elementwise(cols, lambda x, j: (x > thr).astype(np.float64))
    if t == "MissingIndicator":
        return [_missing(step, np.asarray(cols[i], dtype=np.float64)).astype(np.float64)
                for i in step["features"]]
    if t == "Normalizer":
        X = np.column_stack([np.asarray(c, dtype=np.float64) for c in cols])
        norm = {"l1": lambda a: np.abs(a).sum(1), "l2": lambda a: np.sqrt((a * a).sum(1)),
                "max": lambda a: np.abs(a).max(1)}[step["norm"]](X)
        norm[norm == 0] = 1.0
        return list((X / norm[:, None]).T)
    if t in ("PCA", "TruncatedSVD", "FastICA"):
        X = np.column_stack([np.asarray(c, dtype=np.float64) for c in cols])
        if step["mean"] is not None:
            X = X - _arr(step["mean"])
        Y = X @ _arr(step["components"]).T
        if step["whiten"]:
            Y = Y / np.sqrt(_arr(step["explained_variance"]))
        return list(Y.T)
    if t == "KBinsDiscretizer":
        out = []
        for edges, x in zip(step["bin_edges"], cols):
            e = _arr(edges)
            b = np.searchsorted(e[1:-1], np.asarray(x, dtype=np.float64), side="right")
            if step["encode"] == "ordinal":
                out.append(b.astype(np.float64))
            else:
                out += [(b == k).astype(np.float64) for k in range(len(e) - 1)]
        return out
    if t == "PolynomialFeatures":
        X = [np.asarray(c, dtype=np.float64) for c in cols]
        out = []
        for row in step["powers"]:
            y = np.ones(len(X[0]))
            for x, p in zip(X, row):
                if p:
                    y = y * x ** p
            out.append(y)
        return out
    if t == "PowerTransformer":
        out = []
        for lam, x in zip(_arr(step["lambdas"]), cols):
            x = np.asarray(x, dtype=np.float64)
            if step["method"] == "box-cox":
                with np.errstate(invalid="ignore", divide="ignore"):
                    y = np.where(x > 0, scipy.special.boxcox(x, lam), np.nan)
            else:
                y = np.full_like(x, np.nan)
                pos, neg = x >= 0, x < 0
                y[pos] = np.log1p(x[pos]) if abs(lam) < np.spacing(1.0) \
                    else (np.power(x[pos] + 1, lam) - 1) / lam
                y[neg] = -np.log1p(-x[neg]) if abs(lam - 2) <= np.spacing(1.0) \
                    else -(np.power(-x[neg] + 1, 2 - lam) - 1) / (2 - lam)
            out.append(y)
        scaler = {"type": "StandardScaler", "mean": step["mean"], "scale": step["scale"]}
        return _apply(scaler, out)
    if t == "QuantileTransformer":
        refs, out = _arr(step["references"]), []
        for q, x in zip(step["quantiles"], cols):
            q, x = _arr(q), np.asarray(x, dtype=np.float64)
            y = 0.5 * (np.interp(x, q, refs) - np.interp(-x, -q[::-1], -refs[::-1]))
            with np.errstate(invalid="ignore"):
                if step["output_distribution"] == "normal":
                    y[x + 1e-7 > q[-1]] = 1
                    y[x - 1e-7 < q[0]] = 0
                    eps = np.spacing(1)
                    y = np.clip(scipy.stats.norm.ppf(y), scipy.stats.norm.ppf(1e-7 - eps),
                                scipy.stats.norm.ppf(1 - (1e-7 - eps)))
                else:
                    y[x == q[-1]] = 1
                    y[x == q[0]] = 0
            out.append(np.where(np.isnan(x), np.nan, y))
        return out
    if t == "KernelPCA":
        X = np.column_stack([np.asarray(c, dtype=np.float64) for c in cols])
        Y = _arr(step["X_fit"])
        g, c0, d = step["gamma"], step["coef0"], step["degree"]
        dot = X @ Y.T
        K = {"linear": lambda: dot,
             "rbf": lambda: np.exp(-g * ((X * X).sum(1)[:, None] - 2 * dot + (Y * Y).sum(1)[None, :])),
             "poly": lambda: (g * dot + c0) ** d,
             "sigmoid": lambda: np.tanh(g * dot + c0)}[step["kernel"]]()
        K = K - _arr(step["K_fit_rows"]) - K.mean(1)[:, None] + step["K_fit_all"]
        return list((K @ _arr(step["alphas"])).T)
    if t == "SplineTransformer":
        return _splines(step, cols)
    raise ValueError(f"reference: no featurizer {t}")


def _splines(step, cols):
    """scipy's BSpline over each feature's knots (the identity coefficients, periodic ones
    wrapped), beyond the knots as scikit-learn's SplineTransformer documents its extrapolation
    (NaN for 'error', where scikit-learn raises)."""
    from scipy.interpolate import BSpline
    d, mode, out = step["degree"], step["extrapolation"], []
    for knots, x in zip(step["knots"], cols):
        t, x = _arr(knots), np.asarray(x, dtype=np.float64)
        n = len(t) - d - 1
        n_splines = n - d if mode == "periodic" else n
        coef = np.eye(n_splines)
        if mode == "periodic":
            coef = np.concatenate((coef, coef[:d]))
            x = t[d] + (x - t[d]) % (t[n] - t[d])
        spl = BSpline(t, coef, d, extrapolate=mode in ("continue", "periodic"))
        lo, hi = t[d], t[n]
        inside = (x >= lo) & (x <= hi)
        y = np.zeros((len(x), n_splines))
        y[inside] = spl(x[inside])
        if mode in ("continue", "periodic"):
            y = spl(x)
        elif mode == "error":
            y[~inside] = np.nan
        else:
            kept = d if mode == "constant" or d > 1 else d + 1
            for j in range(kept):
                below, above = x < lo, x > hi
                y[below, j] = spl(lo)[j] + (0 if mode == "constant" else (x[below] - lo) * spl(lo, nu=1)[j])
                k = n_splines - 1 - j
                y[above, k] = spl(hi)[k] + (0 if mode == "constant" else (x[above] - hi) * spl(hi, nu=1)[k])
        y[np.isnan(x)] = np.nan
        out += list(y.T if step["include_bias"] else y[:, :-1].T)
    return out


def _apply_steps(steps, cols):
    for step in steps:
        cols = _apply(step, cols)
    return cols


# ---- models ---------------------------------------------------------------------------------

def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def _softmax(m):
    e = np.exp(m - m.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _tree_values(tree, X):
    """The value row [classes] of output 0 at the leaf each row of X (float32) reaches."""
    left, right = tree["children_left"], tree["children_right"]
    feat, thr = tree["feature"], [_num(t) for t in tree["threshold"]]
    value = tree["value"]
    out = []
    for row in X:
        node = 0
        while left[node] != -1:
            node = left[node] if float(row[feat[node]]) <= thr[node] else right[node]
        out.append([_num(v) for v in value[node][0]])
    return np.array(out)


def _missing_rows(trees, X):
    """The rows of X with a NaN in an input some tree splits on. scikit-learn 1.2's trees have no
    rule for a missing value (they raise): such a row has no prediction (NULL). An input no tree
    reads is not looked at."""
    read = sorted({f for tree in trees for f, l in zip(tree["feature"], tree["children_left"]) if l != -1})
    return np.isnan(X[:, read]).any(axis=1) if read else np.zeros(len(X), dtype=bool)


def _void(rows, *arrays):
    """NaN in the given rows of each array (float64 copies)."""
    out = []
    for a in arrays:
        a = np.array(a, dtype=np.float64)
        a[rows] = np.nan
        out.append(a)
    return out


def _hist_values(tree, X):
    """HistGradientBoosting: the leaf value each row of X (float64, NaN = missing) reaches."""
    feat, thr = tree["feature_idx"], [_num(t) for t in tree["num_threshold"]]
    out = []
    for row in X:
        node = 0
        while not tree["is_leaf"][node]:
            x = float(row[feat[node]])
            left = tree["missing_go_to_left"][node] if np.isnan(x) else x <= thr[node]
            node = tree["left"][node] if left else tree["right"][node]
        out.append(_num(tree["value"][node]))
    return np.array(out)


def _average_path_length(n):
    """IsolationForest's c(n): the average path length of an unsuccessful BST search."""
    if n <= 1:
        return 0.0
    if n == 2:
        return 1.0
    return 2.0 * (np.log(n - 1.0) + np.euler_gamma) - 2.0 * (n - 1.0) / n


def _isolation_forest(step, X):
    """predict: -1 where score_samples - offset < 0, else 1."""
    depths = np.zeros(len(X))
    for tree in step["trees"]:
        left, right = tree["children_left"], tree["children_right"]
        feat, thr = tree["feature"], [_num(t) for t in tree["threshold"]]
        for r, row in enumerate(X):
            node, depth = 0, 0
            while left[node] != -1:
                node = left[node] if float(row[feat[node]]) <= thr[node] else right[node]
                depth += 1
            depths[r] += depth + _average_path_length(tree["n_node_samples"][node])
    denominator = len(step["trees"]) * _average_path_length(step["max_samples"])
    ratio = depths / denominator if denominator != 0 else np.ones(len(X))
    decision = -(2 ** -ratio) - step["offset"]
    return np.where(decision < 0, -1.0, 1.0), None


LINEAR_CLASSIFIERS = {"LogisticRegression", "SGDClassifier", "LinearSVC", "Perceptron",
                      "RidgeClassifier", "LogisticRegressionCV", "RidgeClassifierCV"}
LINEAR_REGRESSORS = {"LinearRegression", "Ridge", "Lasso", "ElasticNet", "SGDRegressor",
                     "LinearSVR", "RidgeCV", "LassoCV", "ElasticNetCV", "Lars", "LarsCV",
                     "LassoLars", "LassoLarsCV", "LassoLarsIC", "OrthogonalMatchingPursuit",
                     "OrthogonalMatchingPursuitCV", "HuberRegressor", "QuantileRegressor",
                     "BayesianRidge", "ARDRegression", "TheilSenRegressor"}
GLMS = {"PoissonRegressor", "GammaRegressor", "TweedieRegressor"}


def _modified_huber(d, classes):
    """SGDClassifier(loss='modified_huber'): (clip(d, -1, 1) + 1) / 2, normalized over the
    classes (uniform when all are 0); predict is the sign / the argmax of d."""
    p = (np.clip(d, -1, 1) + 1) / 2
    if d.shape[1] == 1:
        return np.asarray(classes, dtype=np.float64)[(d[:, 0] > 0).astype(int)], \
            np.column_stack([1 - p[:, 0], p[:, 0]])
    total = p.sum(axis=1, keepdims=True)
    proba = np.where(total == 0, 1 / d.shape[1], p / np.where(total == 0, 1, total))
    return np.asarray(classes, dtype=np.float64)[d.argmax(axis=1)], proba


def _model(step, X, classes):
    t = step["type"]
    if t in LINEAR_CLASSIFIERS:
        d = X @ _arr(step["coef"]).T + _arr(step["intercept"])
        proba = None
        if step["loss"] == "modified_huber":
            return _modified_huber(d, classes)
        if d.shape[1] == 1:
            d = d[:, 0]
            idx = (d > 0).astype(int)
            if step["loss"] == "log":
                p = _sigmoid(2 * d) if step["multi_class"] == "multinomial" else _sigmoid(d)
                proba = np.column_stack([1 - p, p])
        else:
            idx = d.argmax(axis=1)
            if step["loss"] == "log":
                if step["multi_class"] == "multinomial":
                    proba = _softmax(d)
                else:
                    p = _sigmoid(d)
                    proba = p / p.sum(axis=1, keepdims=True)
        return np.asarray(classes, dtype=np.float64)[idx], proba
    if t in LINEAR_REGRESSORS:
        return X @ _arr(step["coef"]) + _num(step["intercept"]), None
    if t in GLMS:
        eta = X @ _arr(step["coef"]) + _num(step["intercept"])
        return (np.exp(eta) if step["link"] == "log" else eta), None
    if t == "PLSRegression":
        Z = (X - _arr(step["x_mean"])) / _arr(step["x_std"])
        coef = _arr(step["coef"])
        if coef.ndim == 2:  # a 2-D y: one row per target
            return Z @ coef.T + _arr(step["intercept"]), None
        return Z @ coef + _num(step["intercept"]), None
    Xf = X.astype(np.float32)
    if t in ("DecisionTreeClassifier", "RandomForestClassifier", "ExtraTreesClassifier"):
        total = 0
        for tree in step["trees"]:
            v = _tree_values(tree, Xf)
            total = total + v / v.sum(axis=1, keepdims=True)
        proba = total / len(step["trees"])
        label = np.asarray(classes, dtype=np.float64)[proba.argmax(axis=1)]
        label, proba = _void(_missing_rows(step["trees"], Xf), label, proba)
        return label, proba
    if t in ("DecisionTreeRegressor", "RandomForestRegressor", "ExtraTreesRegressor"):
        total = sum(_tree_values(tree, Xf)[:, 0] for tree in step["trees"])
        (value,) = _void(_missing_rows(step["trees"], Xf), total / len(step["trees"]))
        return value, None
    if t in ("GradientBoostingClassifier", "GradientBoostingRegressor"):
        init = _arr(step["init"])
        raw = np.tile(init, (len(X), 1))
        for stage in step["trees"]:
            for k, tree in enumerate(stage):
                raw[:, k] += step["learning_rate"] * _tree_values(tree, Xf)[:, 0]
        missing = _missing_rows([tree for stage in step["trees"] for tree in stage], Xf)
        if t == "GradientBoostingRegressor":
            return _void(missing, raw[:, 0])[0], None
        if raw.shape[1] == 1:
            p = _sigmoid(2 * raw[:, 0] if step["loss"] == "exponential" else raw[:, 0])
            proba = np.column_stack([1 - p, p])
        else:
            proba = _softmax(raw)
        label = np.asarray(classes, dtype=np.float64)[proba.argmax(axis=1)]
        label, proba = _void(missing, label, proba)
        return label, proba
    if t in OTHER_MODELS:
        return OTHER_MODELS[t](step, X, classes)
    if t in ("HistGradientBoostingClassifier", "HistGradientBoostingRegressor"):
        raw = np.tile(_arr(step["baseline"]), (len(X), 1))
        for it in step["trees"]:
            for k, tree in enumerate(it):
                raw[:, k] += _hist_values(tree, X)
        if t == "HistGradientBoostingRegressor":
            return (np.exp(raw[:, 0]) if step["loss"] == "poisson" else raw[:, 0]), None
        if raw.shape[1] == 1:
            p = _sigmoid(raw[:, 0])
            proba = np.column_stack([1 - p, p])
        else:
            proba = _softmax(raw)
        return np.asarray(classes, dtype=np.float64)[proba.argmax(axis=1)], proba
    if t == "IsolationForest":
        return _isolation_forest(step, Xf)
    raise ValueError(f"reference: no model {t}")


# ---- naive Bayes, k-means, MLP, kernel SVM: scikit-learn's formulas over the fields ---------

def _by_argmax(scores, classes, proba):
    return np.asarray(classes, dtype=np.float64)[scores.argmax(axis=1)], proba


def _softmax_of_jll(jll, classes):
    return _by_argmax(jll, classes, _softmax(jll))


def _gaussian_nb(step, X, classes):
    theta, var, prior = _arr(step["theta"]), _arr(step["var"]), _arr(step["class_prior"])
    jll = np.column_stack([np.log(prior[i]) - 0.5 * np.sum(np.log(2.0 * np.pi * var[i]))
                           - 0.5 * np.sum((X - theta[i]) ** 2 / var[i], 1)
                           for i in range(len(prior))])
    return _softmax_of_jll(jll, classes)


def _multinomial_nb(step, X, classes):
    return _softmax_of_jll(X @ _arr(step["feature_log_prob"]).T + _arr(step["class_log_prior"]),
                           classes)


def _bernoulli_nb(step, X, classes):
    if step["binarize"] is not None:
        X = (X > _num(step["binarize"])).astype(np.float64)
    flp = _arr(step["feature_log_prob"])
    neg = np.log(1 - np.exp(flp))
    jll = X @ (flp - neg).T + _arr(step["class_log_prior"]) + neg.sum(axis=1)
    return _softmax_of_jll(jll, classes)


def _birch(step, X, classes):
    c = _arr(step["subcluster_centers"])
    d = ((X[:, None, :] - c[None, :, :]) ** 2).sum(2)
    labels = np.asarray(classes, dtype=np.float64)[np.asarray(step["subcluster_labels"])]
    return labels[d.argmin(axis=1)], None


def _kmeans(step, X, classes):
    c = _arr(step["cluster_centers"])
    d = ((X[:, None, :] - c[None, :, :]) ** 2).sum(2)
    return d.argmin(axis=1).astype(np.float64), None


_ACT = {"identity": lambda z: z, "tanh": np.tanh, "relu": lambda z: np.maximum(z, 0),
        "logistic": _sigmoid}


def _mlp(step, X, classes):
    h = X
    n = len(step["coefs"])
    for i, (w, b) in enumerate(zip(step["coefs"], step["intercepts"])):
        h = h @ _arr(w) + _arr(b)
        if i < n - 1:
            h = _ACT[step["activation"]](h)
    out = step["out_activation"]
    if out == "identity":
        return h[:, 0], None
    if out == "softmax":
        return _by_argmax(h, classes, _softmax(h))
    p = _sigmoid(h[:, 0])
    return np.asarray(classes, dtype=np.float64)[(p > 0.5).astype(int)], np.column_stack([1 - p, p])


def _kernel(step, X):
    sv, g, c0 = _arr(step["support_vectors"]), _num(step["gamma"]), _num(step["coef0"])
    k = step["kernel"]
    if k == "rbf":
        return np.exp(-g * ((X[:, None, :] - sv[None, :, :]) ** 2).sum(2))
    dot = X @ sv.T
    if k == "linear":
        return dot
    if k == "poly":
        return (g * dot + c0) ** step["degree"]
    return np.tanh(g * dot + c0)


def _svc(step, X, classes):
    # libsvm's one-vs-one vote: pair (i, j), i < j, votes i when its decision is > 0.
    K = _kernel(step, X)
    coef, b, n_sv = _arr(step["dual_coef"]), _arr(step["intercept"]), step["n_support"]
    start = np.concatenate([[0], np.cumsum(n_sv)])
    votes = np.zeros((len(X), len(n_sv)))
    p = 0
    for i in range(len(n_sv)):
        for j in range(i + 1, len(n_sv)):
            si, sj = slice(start[i], start[i + 1]), slice(start[j], start[j + 1])
            d = K[:, si] @ coef[j - 1, si] + K[:, sj] @ coef[i, sj] + b[p]
            votes[:, i] += d > 0
            votes[:, j] += ~(d > 0)
            p += 1
    return _by_argmax(votes, classes, None)


def _svr(step, X, classes):
    return _kernel(step, X) @ _arr(step["dual_coef"])[0] + _arr(step["intercept"])[0], None


def _mixture(step, X, classes):
    """scikit-learn 1.2's _estimate_log_gaussian_prob + log weights, softmax."""
    means, pc, kind = _arr(step["means"]), _arr(step["precisions_cholesky"]), \
        step["covariance_type"]
    d = X.shape[1]
    if kind == "full":
        log_det = np.array([np.sum(np.log(np.diag(c))) for c in pc])
        q = np.column_stack([np.sum(np.square(X @ c - mu @ c), axis=1) for mu, c in zip(means, pc)])
    elif kind == "tied":
        log_det = np.sum(np.log(np.diag(pc)))
        q = np.column_stack([np.sum(np.square(X @ pc - mu @ pc), axis=1) for mu in means])
    elif kind == "diag":
        log_det = np.sum(np.log(pc), axis=1)
        prec = pc ** 2
        q = np.sum(means ** 2 * prec, 1) - 2.0 * X @ (means * prec).T + (X ** 2) @ prec.T
    else:
        log_det = d * np.log(pc)
        prec = pc ** 2
        q = np.sum(means ** 2, 1) * prec - 2 * X @ (means.T * prec) \
            + np.outer(np.sum(X ** 2, axis=1), prec)
    w = -0.5 * (d * np.log(2 * np.pi) + q) + log_det + _arr(step["log_weights"])
    return _by_argmax(w, classes, _softmax(w))


def _calibrated(step, X, classes):
    """CalibratedClassifierCV (scikit-learn 1.2's _CalibratedClassifier.predict_proba), averaged
    over the members."""
    k = len(classes)
    total = 0
    for m in step["members"]:
        d = X @ _arr(m["coef"]).T + _arr(m["intercept"])
        p = np.empty_like(d)
        for c, cal in enumerate(m["calibrators"]):
            if step["method"] == "sigmoid":
                p[:, c] = 1 / (1 + np.exp(cal["a"] * d[:, c] + cal["b"]))
            else:
                x, y = _arr(cal["x"]), _arr(cal["y"])
                p[:, c] = np.interp(np.clip(d[:, c], x[0], x[-1]), x, y)
        if k == 2:
            p = np.column_stack([1 - p[:, 0], p[:, 0]])
        else:
            s = p.sum(axis=1, keepdims=True)
            p = np.where(s == 0, 1 / k, p / np.where(s == 0, 1, s))
        total = total + p
    proba = total / len(step["members"])
    return _by_argmax(proba, classes, proba)


def _neighbors(step, X, classes):
    """scikit-learn's brute-force k nearest neighbours: distances summed directly, the k
    smallest (equal ones in training-row order), 1/d weights unless uniform, where a zero
    distance leaves only the exact matches (weight 1 each)."""
    fit_x, p = _arr(step["fit_X"]), _num(step["p"])
    diff = np.abs(X[:, None, :] - fit_x[None, :, :])
    d = (diff.sum(2) if p == 1 else np.sqrt((diff ** 2).sum(2)) if p == 2
         else diff.max(2) if np.isinf(p) else (diff ** p).sum(2) ** (1 / p))
    if "radius" in step:
        return _radius_neighbors(step, d, classes)
    idx = np.argsort(d, axis=1, kind="stable")[:, :step["n_neighbors"]]
    dk = np.take_along_axis(d, idx, axis=1)
    if step["weights"] == "uniform":
        w = np.ones_like(dk)
    else:
        with np.errstate(divide="ignore"):
            w = 1.0 / dk
        exact = np.isinf(w).any(axis=1)
        w[exact] = np.isinf(w[exact])
    w = w / w.sum(axis=1, keepdims=True)
    if step["type"] == "KNeighborsRegressor":
        return (w * _arr(step["y"])[idx]).sum(axis=1), None
    y = np.asarray(step["y"], dtype=np.int64)[idx]
    proba = np.column_stack([(w * (y == c)).sum(axis=1) for c in range(len(classes))])
    return _by_argmax(proba, classes, proba)


# ---- ensembles: each member a sub-document {"task", "classes", "steps"} over its columns ------

def _member(member, X):
    """(predict, predict_proba or None, the member's featurized X) of a sub-document."""
    cols = _apply_steps(member["steps"][:-1], [X[:, j] for j in range(X.shape[1])])
    Xm = np.column_stack([np.asarray(c, dtype=np.float64) for c in cols])
    predict, proba = _model(member["steps"][-1], Xm, member.get("classes"))
    return predict, proba, Xm


def _spread(values, member_classes, k):
    """A member's columns (one per class it was fitted on) in the ensemble's k columns."""
    out = np.zeros((values.shape[0], k))
    out[:, np.asarray(member_classes, dtype=int)] = values
    return out


def _votes(predict, k):
    out = np.zeros((len(predict), k))
    out[np.arange(len(predict)), predict.astype(int)] = 1.0
    return out


def _voting(step, X, classes):
    members = [_member(m, X) for m in step["estimators"]]
    w = step["weights"] or [1.0] * len(members)
    if step["type"] == "VotingRegressor":
        return np.average([p for p, _, _ in members], axis=0, weights=w), None
    k = len(classes)
    if step["voting"] == "soft":
        proba = np.average([_spread(pr, m["classes"], k) for (_, pr, _), m in
                            zip(members, step["estimators"])], axis=0, weights=w)
        return _by_argmax(proba, classes, proba)
    votes = sum(wj * _votes(p, k) for wj, (p, _, _) in zip(w, members))
    return _by_argmax(votes, classes, None)


def _bagging(step, X, classes):
    outs = [_member(m, X[:, f]) for m, f in zip(step["estimators"], step["features"])]
    if step["type"] == "BaggingRegressor":
        return np.mean([p for p, _, _ in outs], axis=0), None
    k = len(classes)
    total = 0
    for (p, pr, _), m in zip(outs, step["estimators"]):
        total = total + (_spread(pr, m["classes"], k) if step["proba"] else _votes(p, k))
    proba = total / len(outs)
    return _by_argmax(proba, classes, proba)


def _stacking(step, X, classes):
    meta = []
    for m, method in zip(step["estimators"], step["stack_methods"]):
        p, pr, Xm = _member(m, X)
        if method == "predict_proba":
            pr = _spread(pr, m["classes"], len(classes))
            meta.append(pr[:, 1:] if len(classes) == 2 else pr)
        elif method == "decision_function":
            last = m["steps"][-1]
            meta.append(Xm @ _arr(last["coef"]).T + _arr(last["intercept"]))
        else:
            meta.append(p[:, None])
    if step["passthrough"]:
        meta.append(X)
    return _model(step["final_estimator"], np.column_stack(meta), classes)
def _radius_neighbors(step, d, classes):
    """Every training row within the radius; none: the outlier label's class (proba 1), NaN
    without one or for the regressor."""
    inside = d <= step["radius"]
    with np.errstate(divide="ignore"):
        w = np.where(inside, 1.0 if step["weights"] == "uniform" else 1.0 / d, 0.0)
    if step["weights"] == "distance":  # a zero distance: only the exact matches count
        exact = (d == 0).any(axis=1)
        w[exact] = (d[exact] == 0)
    total = w.sum(axis=1, keepdims=True)
    empty = total[:, 0] == 0
    if step["type"] == "RadiusNeighborsRegressor":
        with np.errstate(invalid="ignore"):
            return (w @ _arr(step["y"])) / total[:, 0], None
    y = np.asarray(step["y"], dtype=np.int64)
    proba = np.column_stack([(w * (y == c)).sum(axis=1) for c in range(len(classes))])
    with np.errstate(invalid="ignore"):
        proba = proba / total
    if step.get("outlier_label") is not None:
        proba[empty] = np.eye(len(classes))[step["outlier_label"]]
    predict, proba = _by_argmax(proba, classes, proba)
    return np.where(empty & np.isnan(proba[:, 0]), np.nan, predict), proba


OTHER_MODELS = {"GaussianNB": _gaussian_nb, "MultinomialNB": _multinomial_nb,
                "BernoulliNB": _bernoulli_nb, "KMeans": _kmeans, "MiniBatchKMeans": _kmeans,
                "MLPClassifier": _mlp, "MLPRegressor": _mlp, "SVC": _svc, "NuSVC": _svc,
                "SVR": _svr, "NuSVR": _svr, "GaussianMixture": _mixture,
                "BayesianGaussianMixture": _mixture, "CalibratedClassifierCV": _calibrated,
                "KNeighborsClassifier": _neighbors, "KNeighborsRegressor": _neighbors,
                "VotingClassifier": _voting, "VotingRegressor": _voting,
                "BaggingClassifier": _bagging, "BaggingRegressor": _bagging,
                "StackingClassifier": _stacking, "StackingRegressor": _stacking,
                "MeanShift": _kmeans, "Birch": _birch,
                "RadiusNeighborsClassifier": _neighbors, "RadiusNeighborsRegressor": _neighbors}


def evaluate(doc, data):
    """data: {input name: sequence} (numbers with NaN, or strings with None).
    Returns (predict [n], predict_proba [n × classes] or None)."""
    cols = []
    for inp in doc["inputs"]:
        x = data[inp["name"]]
        if inp["type"] == "text":
            cols.append(np.array([None if _is_missing(v) else v for v in x], dtype=object))
        else:
            cols.append(np.asarray(x, dtype=np.float64))
    steps = doc["steps"]
    cols = _apply_steps(steps[:-1], cols)
    X = np.column_stack([np.asarray(c, dtype=np.float64) for c in cols]) if cols else \
        np.zeros((len(next(iter(data.values()))), 0))
    return _model(steps[-1], X, doc.get("classes"))
