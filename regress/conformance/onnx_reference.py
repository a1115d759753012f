"""A reference evaluator for ONNX graphs, written from the ONNX operator specification with numpy,
for the conformance tests (onnxruntime is not in Debian).

    outputs = evaluate(model_proto, {"X": x})     # {name: numpy array}

Every tensor keeps the element type the graph declares: float inputs stay float32 through
float32 operators (numpy's float32 ufuncs round each result to float32, as an ONNX runtime
does), double stays float64, integers and booleans keep theirs. Only the default domain's
operators that the tests use are here, and the ai.onnx.ml ones of the converter-shaped graphs
(LabelEncoder, Scaler, LinearRegressor, TreeEnsembleRegressor, SVMRegressor, SVMClassifier without probabilities, LinearClassifier without a post transform,
ArrayFeatureExtractor); another
raises NotImplementedError naming it.
"""

import math

import numpy as np
from onnx import numpy_helper

_ONNX_TYPES = {1: np.float32, 2: np.uint8, 3: np.int8, 5: np.int16, 6: np.int32, 7: np.int64,
               9: np.bool_, 10: np.float16, 11: np.float64, 12: np.uint32, 13: np.uint64}


def _attrs(node):
    from onnx import helper
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x).astype(x.dtype)


def _same_type(f):
    """f applied in the input's type (numpy may widen a float32 scalar result)."""
    return lambda x: np.asarray(f(x)).astype(x.dtype)


_UNARY = {
    "Abs": np.abs, "Neg": np.negative, "Reciprocal": _same_type(lambda x: np.reciprocal(x)),
    "Sqrt": np.sqrt, "Exp": np.exp, "Log": np.log, "Floor": np.floor, "Ceil": np.ceil,
    "Round": np.rint,  # half to even
    "Sign": np.sign, "Erf": _erf, "Tanh": np.tanh,
    "Sigmoid": _same_type(lambda x: 1 / (1 + np.exp(-x))),
    "Relu": _same_type(lambda x: np.maximum(x, 0)), "Not": np.logical_not,
    "IsNaN": np.isnan, "Identity": lambda x: x,
}

_BINARY = {
    "Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Pow": np.power,
    "Less": np.less, "LessOrEqual": np.less_equal, "Greater": np.greater,
    "GreaterOrEqual": np.greater_equal, "Equal": np.equal,
    "And": np.logical_and, "Or": np.logical_or, "Xor": np.logical_xor,
}


def _div(a, b):
    if np.issubdtype(a.dtype, np.integer):  # integer division truncates toward zero
        return (np.trunc(a / b)).astype(a.dtype)
    return np.divide(a, b)


def _axes(node, inputs, attrs, since):
    if len(inputs) > 1 and inputs[1] is not None:
        return tuple(int(v) for v in inputs[1])
    return tuple(attrs["axes"]) if "axes" in attrs else None


def _reduce(f):
    def run(node, inputs, attrs):
        x = inputs[0]
        axes = _axes(node, inputs, attrs, 13)
        keep = bool(attrs.get("keepdims", 1))
        if axes is None and attrs.get("noop_with_empty_axes", 0):
            return x
        return np.asarray(f(x, axes, keep)).astype(x.dtype)
    return run


_REDUCE = {
    "ReduceSum": _reduce(lambda x, a, k: np.sum(x, axis=a, keepdims=k)),
    "ReduceMean": _reduce(lambda x, a, k: np.mean(x, axis=a, keepdims=k)),
    "ReduceMax": _reduce(lambda x, a, k: np.max(x, axis=a, keepdims=k)),
    "ReduceMin": _reduce(lambda x, a, k: np.min(x, axis=a, keepdims=k)),
    "ReduceProd": _reduce(lambda x, a, k: np.prod(x, axis=a, keepdims=k)),
    "ReduceSumSquare": _reduce(lambda x, a, k: np.sum(x * x, axis=a, keepdims=k)),
    "ReduceL1": _reduce(lambda x, a, k: np.sum(np.abs(x), axis=a, keepdims=k)),
    "ReduceL2": _reduce(lambda x, a, k: np.sqrt(np.sum(x * x, axis=a, keepdims=k))),
    "ReduceLogSumExp": _reduce(lambda x, a, k: np.log(np.sum(np.exp(x), axis=a, keepdims=k))),
}


def _softmax(x, axis, log=False):
    m = np.max(x, axis=axis, keepdims=True)
    e = np.exp(x - m)
    s = np.sum(e, axis=axis, keepdims=True)
    return (x - m - np.log(s)) if log else e / s


def _run(node, inputs, attrs):
    op = node.op_type
    if op in _UNARY:
        return _UNARY[op](inputs[0])
    if op in _BINARY:
        return _BINARY[op](inputs[0], inputs[1])
    if op == "Div":
        return _div(inputs[0], inputs[1])
    if op in _REDUCE:
        return _REDUCE[op](node, inputs, attrs)
    if op == "LeakyRelu":
        x = inputs[0]
        return np.where(x < 0, x * x.dtype.type(attrs.get("alpha", 0.01)), x)
    if op == "Clip":
        x = inputs[0]
        lo = inputs[1] if len(inputs) > 1 and inputs[1] is not None else None
        hi = inputs[2] if len(inputs) > 2 and inputs[2] is not None else None
        if lo is not None:
            x = np.where(x < lo, lo, x)
        if hi is not None:
            x = np.where(x > hi, hi, x)
        return x.astype(inputs[0].dtype)
    if op == "Where":
        return np.where(inputs[0], inputs[1], inputs[2])
    if op == "Cast":
        return inputs[0].astype(_ONNX_TYPES[attrs["to"]])
    if op == "Constant":
        return numpy_helper.to_array(attrs["value"])
    if op == "MatMul":
        return np.matmul(inputs[0], inputs[1])
    if op == "Gemm":
        a = inputs[0].T if attrs.get("transA", 0) else inputs[0]
        b = inputs[1].T if attrs.get("transB", 0) else inputs[1]
        y = a.dtype.type(attrs.get("alpha", 1.0)) * (a @ b)
        if len(inputs) > 2 and inputs[2] is not None:
            y = y + a.dtype.type(attrs.get("beta", 1.0)) * inputs[2]
        return y.astype(a.dtype)
    if op in ("Softmax", "LogSoftmax"):
        return _softmax(inputs[0], attrs.get("axis", -1), op == "LogSoftmax").astype(inputs[0].dtype)
    if op in ("ArgMax", "ArgMin"):
        f = np.argmax if op == "ArgMax" else np.argmin
        axis = attrs.get("axis", 0)
        y = f(inputs[0], axis=axis)
        return np.expand_dims(y, axis).astype(np.int64) if attrs.get("keepdims", 1) else y.astype(np.int64)
    if op == "Concat":
        return np.concatenate(inputs, axis=attrs["axis"])
    if op == "Reshape":
        shape = [int(v) for v in inputs[1]]
        shape = [inputs[0].shape[i] if v == 0 else v for i, v in enumerate(shape)]
        return inputs[0].reshape(shape)
    if op == "Flatten":
        axis = attrs.get("axis", 1)
        x = inputs[0]
        return x.reshape(int(np.prod(x.shape[:axis])), -1)
    if op == "Squeeze":
        axes = _axes(node, inputs, attrs, 13)
        return np.squeeze(inputs[0], axis=axes)
    if op == "Unsqueeze":
        y = inputs[0]
        for a in sorted(_axes(node, inputs, attrs, 13)):
            y = np.expand_dims(y, a)
        return y
    if op == "Gather":
        return np.take(inputs[0], inputs[1], axis=attrs.get("axis", 0))
    if op == "GatherElements":
        x, idx = inputs[0], inputs[1].astype(np.int64)
        axis = attrs.get("axis", 0)
        idx = np.where(idx < 0, idx + x.shape[axis], idx)
        x = x[tuple(slice(None) if a == axis else slice(0, d) for a, d in enumerate(idx.shape))]
        return np.take_along_axis(x, idx, axis=axis)
    if op == "Einsum":
        eq = attrs["equation"]
        eq = eq.decode() if isinstance(eq, bytes) else eq
        return np.einsum(eq, *inputs).astype(inputs[0].dtype)
    if op == "CumSum":
        x, axis = inputs[0], int(np.asarray(inputs[1]).reshape(-1)[0])
        if attrs.get("reverse", 0):
            x = np.flip(x, axis)
        y = np.cumsum(x, axis=axis, dtype=x.dtype)
        if attrs.get("exclusive", 0):  # the sum before each entry: 0, then y shifted by one
            y = np.concatenate([np.zeros_like(np.take(y, [0], axis=axis)), np.delete(y, -1, axis=axis)], axis=axis)
        return np.flip(y, axis) if attrs.get("reverse", 0) else y
    if op in ("Max", "Min", "Sum", "Mean"):
        f = {"Max": np.maximum, "Min": np.minimum}.get(op, np.add)
        y = inputs[0]
        for x in inputs[1:]:
            y = f(y, x)
        return (y / y.dtype.type(len(inputs))).astype(y.dtype) if op == "Mean" else y
    if op == "IsInf":
        x = inputs[0]
        return ((np.isposinf(x) if attrs.get("detect_positive", 1) else False) |
                (np.isneginf(x) if attrs.get("detect_negative", 1) else False))
    if op == "Transpose":
        return np.transpose(inputs[0], attrs.get("perm"))
    if op == "Expand":
        x = inputs[0]
        return np.broadcast_to(x, np.broadcast_shapes(x.shape, tuple(int(v) for v in inputs[1]))).copy()
    if op == "Tile":
        return np.tile(inputs[0], [int(v) for v in inputs[1]])
    if op == "Slice":
        x = inputs[0]
        starts, ends = inputs[1], inputs[2]
        axes = inputs[3] if len(inputs) > 3 and inputs[3] is not None else range(len(starts))
        steps = inputs[4] if len(inputs) > 4 and inputs[4] is not None else [1] * len(starts)
        index = [slice(None)] * x.ndim
        for s, e, a, st in zip(starts, ends, axes, steps):
            index[int(a)] = slice(int(s), int(e), int(st))
        return x[tuple(index)]
    if op == "Shape":
        shape = np.array(inputs[0].shape, dtype=np.int64)
        return shape[attrs.get("start", 0):attrs.get("end", len(shape))]
    if op == "ConstantOfShape":
        value = numpy_helper.to_array(attrs["value"]) if "value" in attrs else np.zeros(1, np.float32)
        return np.full([int(v) for v in inputs[0]], value.reshape(-1)[0], dtype=value.dtype)
    if op in _ML:
        return _ML[op](inputs, attrs)
    if op == "CategoryMapper":
        table = {(k.decode() if isinstance(k, bytes) else k): v for k, v in zip(attrs["cats_strings"], attrs["cats_int64s"])}
        x = inputs[0]
        return np.asarray([table.get(v, attrs.get("default_int64", -1)) for v in x.reshape(-1)], np.int64).reshape(x.shape)
    raise NotImplementedError(f"onnx_reference: operator {op} is not implemented")


# --- ai.onnx.ml operators (float32 throughout, as ONNX Runtime computes them) ----------------

def _scaler(inputs, attrs):
    x = inputs[0].astype(np.float32)
    return ((x - np.float32(attrs.get("offset", [0.0])) ) * np.float32(attrs.get("scale", [1.0]))).astype(np.float32)


def _kernel(x, attrs):
    sv = np.asarray(attrs["support_vectors"], np.float32).reshape(-1, x.shape[1])
    gamma, coef0, degree = (np.float32(v) for v in attrs.get("kernel_params", [0.0, 0.0, 0.0]))
    kind = attrs.get("kernel_type", b"LINEAR")
    kind = kind.decode() if isinstance(kind, bytes) else kind
    if kind == "RBF":
        d = x[:, None, :] - sv[None, :, :]
        return np.exp(-gamma * np.sum(d * d, axis=2)).astype(np.float32)
    dot = (x @ sv.T).astype(np.float32)
    if kind == "POLY":
        return np.power(gamma * dot + coef0, degree).astype(np.float32)
    if kind == "SIGMOID":
        return np.tanh(gamma * dot + coef0).astype(np.float32)
    return dot


def _svm_regressor(inputs, attrs):
    k = _kernel(inputs[0].astype(np.float32), attrs)
    coef = np.asarray(attrs["coefficients"], np.float32)
    return (k @ coef + np.float32(attrs["rho"][0])).astype(np.float32).reshape(-1, 1)


def _pairwise_coupling(r):
    """libsvm's multiclass_probability as ONNX Runtime runs it: float32, 100 iterations at
    most, stopping within 0.005 / k."""
    k = r.shape[0]
    f = np.float32
    q, qp, p = np.zeros((k, k), f), np.zeros(k, f), np.full(k, f(1) / f(k), f)
    eps = f(0.005) / f(k)
    for t in range(k):
        for j in range(t):
            q[t, t] += r[j, t] * r[j, t]
            q[t, j] = q[j, t]
        for j in range(t + 1, k):
            q[t, t] += r[j, t] * r[j, t]
            q[t, j] = -r[j, t] * r[t, j]
    for _ in range(100):
        qp = (q @ p).astype(f)
        pqp = f(p @ qp)
        if np.max(np.abs(qp - pqp)) < eps:
            break
        for t in range(k):
            diff = f((-qp[t] + pqp) / q[t, t])
            p[t] += diff
            pqp = f((pqp + diff * (diff * q[t, t] + f(2) * qp[t])) / (f(1) + diff) / (f(1) + diff))
            qp = ((qp + diff * q[t, :]) / (f(1) + diff)).astype(f)
            p = (p / (f(1) + diff)).astype(f)
    return p


def _svm_probabilities(scores, attrs):
    """ONNX Runtime's SVM probabilities: each pair's 1 - logistic(d·A + B) clipped to
    [1e-7, 1 - 1e-7], then the coupling."""
    a, b = np.asarray(attrs["prob_a"], np.float32), np.asarray(attrs["prob_b"], np.float32)
    k = int(round((1 + np.sqrt(1 + 8 * scores.shape[1])) / 2))
    out = np.zeros((scores.shape[0], k), np.float32)
    for n in range(scores.shape[0]):
        r = np.zeros((k, k), np.float32)
        pair = 0
        for i in range(k):
            for j in range(i + 1, k):
                v = np.float32(1) - np.float32(1) / (np.float32(1) + np.exp(-(scores[n, pair] * a[pair] + b[pair])))
                v = min(max(v, np.float32(1e-7)), np.float32(1) - np.float32(1e-7))
                r[i, j], r[j, i] = v, np.float32(1) - v
                pair += 1
        out[n] = _pairwise_coupling(r)
    return out


def _svm_classifier_ovo(inputs, attrs):
    """Label (by one-vs-one votes, the lowest class on a tie) and the scores per class pair, or
    with prob_a / prob_b the probabilities."""
    k = _kernel(inputs[0].astype(np.float32), attrs)
    per_class = list(attrs["vectors_per_class"])
    start = np.concatenate([[0], np.cumsum(per_class)]).astype(int)
    n_classes = len(per_class)
    coef = np.asarray(attrs["coefficients"], np.float32).reshape(n_classes - 1, -1)
    rho = np.asarray(attrs["rho"], np.float32)
    scores, votes, p = [], np.zeros((k.shape[0], n_classes)), 0
    for i in range(n_classes):
        for j in range(i + 1, n_classes):
            si, sj = slice(start[i], start[i + 1]), slice(start[j], start[j + 1])
            d = (k[:, si] @ coef[j - 1, si] + k[:, sj] @ coef[i, sj] + rho[p]).astype(np.float32)
            votes[:, i] += d > 0
            votes[:, j] += d <= 0
            scores.append(d)
            p += 1
    labels = np.asarray(attrs["classlabels_ints"], np.int64)
    scores = np.stack(scores, axis=1)
    if "prob_a" in attrs:
        return labels[np.argmax(votes, axis=1)], _svm_probabilities(scores, attrs)
    return labels[np.argmax(votes, axis=1)], scores


def _linear_regressor(inputs, attrs):
    x = inputs[0].astype(np.float32)
    intercepts = np.asarray(attrs.get("intercepts", [0.0]), np.float32)
    coef = np.asarray(attrs["coefficients"], np.float32).reshape(len(intercepts), -1)
    return _post_transform((x @ coef.T + intercepts).astype(np.float32), attrs.get("post_transform", "NONE"))


def _text(v):
    return v.decode() if isinstance(v, bytes) else v


def _post_transform(scores, post):
    """ONNX Runtime's write_scores over [N, k] float32 scores: per row (SOFTMAX, SOFTMAX_ZERO) or
    per entry (LOGISTIC, PROBIT); a single column takes PROBIT only."""
    post, z = _text(post), scores.astype(np.float32).copy()
    if post == "PROBIT":
        x = 2 * z - 1
        sgn = np.where(x < 0, np.float32(-1), np.float32(1))
        lg = np.log((1 - x) * (1 + x))
        v = np.float32(2 / (3.14159 * 0.147)) + np.float32(0.5) * lg
        v2 = np.float32(1 / 0.147) * lg
        return (np.float32(1.41421356) * sgn * np.sqrt(-v + np.sqrt(v * v - v2))).astype(np.float32)
    if post == "NONE" or z.shape[1] == 1:
        return z
    if post == "LOGISTIC":
        return (1 / (1 + np.exp(-z))).astype(np.float32)
    m = z.max(axis=1, keepdims=True)
    if post == "SOFTMAX":
        e = np.exp(z - m)
        return (e / e.sum(axis=1, keepdims=True)).astype(np.float32)
    assert post == "SOFTMAX_ZERO", "onnx_reference: post_transform " + post
    keep = np.abs(z) > np.float32(1e-7)
    e = np.where(keep, np.exp(z - m), z * np.exp(-m))
    return (e / np.where(keep, e, 0).sum(axis=1, keepdims=True)).astype(np.float32)


def _tree_ensemble(x, attrs, prefix, n_out):
    """The aggregated raw scores [N, n_out] (SUM, AVERAGE, MIN, MAX; a tree takes part in an
    output only where its leaf weighs it, as ONNX Runtime), plus base_values; BRANCH_LEQ /
    BRANCH_LT splits on float32 values."""
    trees, nodes = {}, {}
    for i, (t, nid) in enumerate(zip(attrs["nodes_treeids"], attrs["nodes_nodeids"])):
        nodes[(t, nid)] = i
        trees.setdefault(t, nid)
        trees[t] = min(trees[t], nid)
    leaves = {}
    for t, nid, target, w in zip(attrs[prefix + "_treeids"], attrs[prefix + "_nodeids"], attrs[prefix + "_ids"],
                                 attrs[prefix + "_weights"]):
        leaves.setdefault((t, nid), []).append((target, np.float32(w)))
    agg = _text(attrs.get("aggregate_function", "SUM"))
    base = np.asarray(attrs.get("base_values", [0.0] * n_out), np.float32)
    modes = [_text(m) for m in attrs["nodes_modes"]]
    out = np.zeros((x.shape[0], n_out), np.float32)
    for r in range(x.shape[0]):
        per_tree = [[] for _ in range(n_out)]
        for t, root in trees.items():
            i = nodes[(t, root)]
            while modes[i] != "LEAF":
                v, thr = x[r, attrs["nodes_featureids"][i]], np.float32(attrs["nodes_values"][i])
                go = v <= thr if modes[i] == "BRANCH_LEQ" else v < thr
                nid = attrs["nodes_truenodeids"][i] if go else attrs["nodes_falsenodeids"][i]
                i = nodes[(t, nid)]
            for target, w in leaves.get((t, attrs["nodes_nodeids"][i]), []):
                per_tree[target].append(w)
        for target, ws in enumerate(per_tree):
            if not ws:
                continue
            ws = np.asarray(ws, np.float32)
            out[r, target] = {"SUM": ws.sum(dtype=np.float32), "AVERAGE": ws.sum(dtype=np.float32) / np.float32(len(trees)),
                              "MIN": ws.min(), "MAX": ws.max()}[agg]
    return (out + base).astype(np.float32)


def _tree_ensemble_regressor(inputs, attrs):
    raw = _tree_ensemble(inputs[0].astype(np.float32), attrs, "target", attrs.get("n_targets", 1))
    return _post_transform(raw, attrs.get("post_transform", "NONE"))


def _tree_ensemble_classifier(inputs, attrs):
    """The label of the largest raw score (the first on a tie) and the post-transformed scores.
    Two classes whose leaves weigh one class only are ONNX Runtime's binary case (NONE only
    here): that class's sum s is the positive score, [1 - s, s] (all weights >= 0, class 1 where
    s > 1/2) or [-s, s] (class 1 where s > 0)."""
    labels = np.asarray(attrs["classlabels_int64s"], np.int64)
    raw = _tree_ensemble(inputs[0].astype(np.float32), attrs, "class", len(labels))
    if len(labels) == 2 and len(set(attrs["class_ids"])) == 1:
        assert _text(attrs.get("post_transform", "NONE")) == "NONE", "onnx_reference: binary case post_transform"
        score = raw[:, attrs["class_ids"][0]]
        positive = min(attrs["class_weights"]) >= 0
        label = np.where(score > (0.5 if positive else 0.0), labels[1], labels[0])
        return label, np.stack([1 - score if positive else -score, score], axis=1).astype(np.float32)
    return labels[np.argmax(raw, axis=1)], _post_transform(raw, attrs.get("post_transform", "NONE"))


def _label_encoder(inputs, attrs):
    def texts(v):
        return [t.decode() if isinstance(t, bytes) else t for t in v]
    keys = attrs.get("keys_floats") or attrs.get("keys_int64s") or texts(attrs.get("keys_strings", []))
    if "values_strings" in attrs:
        values, default = texts(attrs["values_strings"]), attrs.get("default_string", b"_Unused")
        default = default.decode() if isinstance(default, bytes) else default
        out_type = object
    elif "values_floats" in attrs:
        values, default, out_type = attrs["values_floats"], attrs.get("default_float", -0.0), np.float32
    else:
        values, default, out_type = attrs["values_int64s"], attrs.get("default_int64", -1), np.int64
    table = dict(zip(keys, values))
    x = inputs[0]
    flat = [table.get(v.item() if hasattr(v, "item") else v, default) for v in x.reshape(-1)]
    return np.asarray(flat, dtype=out_type).reshape(x.shape)


def _array_feature_extractor(inputs, attrs):
    return np.take(inputs[0], inputs[1].astype(np.int64), axis=-1)


_ML = {"LabelEncoder": _label_encoder, "Scaler": _scaler, "LinearRegressor": _linear_regressor, "TreeEnsembleRegressor": _tree_ensemble_regressor, "SVMRegressor": _svm_regressor, "ArrayFeatureExtractor": _array_feature_extractor}
def _linear_classifier(inputs, attrs):
    """Label (of the largest raw score) and post-transformed scores, several classes."""
    x = inputs[0].astype(np.float32)
    intercepts = np.asarray(attrs["intercepts"], np.float32)
    coef = np.asarray(attrs["coefficients"], np.float32).reshape(len(intercepts), -1)
    scores = (x @ coef.T + intercepts).astype(np.float32)
    labels = np.asarray(attrs["classlabels_ints"], np.int64)
    return labels[np.argmax(scores, axis=1)], _post_transform(scores, attrs.get("post_transform", "NONE"))


_ML_MULTI = {"SVMClassifier": _svm_classifier_ovo, "LinearClassifier": _linear_classifier,
             "TreeEnsembleClassifier": _tree_ensemble_classifier}


def _top_k(inputs, attrs):
    """Values and indices of the K largest (smallest) along the axis, equal values by index."""
    x, k = inputs[0], int(inputs[1].reshape(-1)[0])
    axis = attrs.get("axis", -1)
    key = -x if attrs.get("largest", 1) else x
    idx = np.take(np.argsort(key, axis=axis, kind="stable"), np.arange(k), axis=axis)
    return np.take_along_axis(x, idx, axis=axis), idx.astype(np.int64)


_ML_MULTI["TopK"] = _top_k


def evaluate(model, feeds):
    """The graph's outputs for the input arrays `feeds` ({input name: numpy array})."""
    values = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    values.update(feeds)
    for node in model.graph.node:
        inputs = [values[name] if name else None for name in node.input]
        if node.op_type in _ML_MULTI:
            for name, value in zip(node.output, _ML_MULTI[node.op_type](inputs, _attrs(node))):
                values[name] = np.asarray(value)
            continue
        out = _run(node, inputs, _attrs(node))
        values[node.output[0]] = np.asarray(out)
    return {o.name: values[o.name] for o in model.graph.output}
