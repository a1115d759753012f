"""Synthetic model documents of any size, built without training (the soak and cancel suites
and bench/runtime.py need big models fast).

    xgboost_model(trees, depth, features)  -> an XGBoost JSON document (text), binary:logistic,
                                              complete trees, features f1..f<features>
    nested_feature_union(depth)            -> a scikit-learn document (the exporter's format) as
                                              JSON text: FeatureUnion nested `depth` deep
    rbf_svc(support_vectors, features)     -> a scikit-learn document: a binary RBF SVC
"""

import json
import random


def xgboost_tree(values, tree_id, depth, features):
    """A complete tree; its splits and leaves are taken from `values` (random numbers) by
    position, which is fast enough for 100k trees."""
    inner = (1 << depth) - 1
    n = (1 << (depth + 1)) - 1
    base = tree_id * 31
    left = [2 * i + 1 for i in range(inner)] + [-1] * (n - inner)
    right = [2 * i + 2 for i in range(inner)] + [-1] * (n - inner)
    parents = [2147483647] + [(i - 1) // 2 for i in range(1, n)]
    split = [(base + 7 * i) % features for i in range(inner)] + [0] * (n - inner)
    cond = [values[(base + i) % len(values)] for i in range(n)]
    return {
        "base_weights": [0.0] * n, "categories": [], "categories_nodes": [],
        "categories_segments": [], "categories_sizes": [],
        "default_left": [(base + i) & 1 for i in range(inner)] + [0] * (n - inner),
        "id": tree_id, "left_children": left, "loss_changes": [0.0] * n, "parents": parents,
        "right_children": right, "split_conditions": cond, "split_indices": split,
        "split_type": [0] * n, "sum_hessian": [1.0] * n,
        "tree_param": {"num_deleted": "0", "num_feature": str(features), "num_nodes": str(n),
                       "size_leaf_vector": "0"},
    }


def xgboost_model(trees, depth, features, seed=1):
    """The document as JSON text. Trees repeat with a period of 97 (ids differ), which keeps
    100k-tree documents quick to build."""
    rng = random.Random(seed)
    values = [round(rng.uniform(-0.5, 0.5), 3) for _ in range(997)]
    period = [json.dumps(xgboost_tree(values, t, depth, features)) for t in range(min(trees, 97))]
    marker = '"id": '
    tree_texts = []
    for t in range(trees):
        text = period[t % len(period)]
        at = text.index(marker) + len(marker)
        end = text.index(",", at)
        tree_texts.append(text[:at] + str(t) + text[end:])
    doc = {
        "learner": {
            "attributes": {},
            "feature_names": [f"f{i + 1}" for i in range(features)],
            "feature_types": ["float"] * features,
            "gradient_booster": {
                "model": {
                    "gbtree_model_param": {"num_parallel_tree": "1", "num_trees": str(trees),
                                           "size_leaf_vector": "0"},
                    "tree_info": [0] * trees,
                    "trees": ["TREES"],
                },
                "name": "gbtree",
            },
            "learner_model_param": {"base_score": "5E-1", "boost_from_average": "1",
                                    "num_class": "0", "num_feature": str(features),
                                    "num_target": "1"},
            "objective": {"name": "binary:logistic",
                          "reg_loss_param": {"scale_pos_weight": "1"}},
        },
        "version": [1, 7, 4],
    }
    return json.dumps(doc).replace('["TREES"]', "[" + ", ".join(tree_texts) + "]")


def sklearn_document(inputs, steps, task="regression", classes=None):
    doc = {"format": "sklearn", "version": 1, "sklearn_version": "1.2.1",
           "inputs": [{"name": name, "type": "numeric"} for name in inputs],
           "task": task, "steps": steps}
    if classes is not None:
        doc["classes"] = classes
    return doc


def nested_feature_union(depth, features=2):
    """A LinearRegression after `depth` FeatureUnions, each with one part: the next one.
    Returned as JSON text (too deep for the json module's recursion limit)."""
    inner = json.dumps([{"type": "StandardScaler", "mean": [0.5] * features,
                         "scale": [2.0] * features}])
    for _ in range(depth):
        inner = '[{"type": "FeatureUnion", "transformers": [{"steps": ' + inner + '}]}]'
    model = json.dumps({"type": "LinearRegression", "coef": [1.0] * features, "intercept": 0.25})
    doc = sklearn_document([f"f{i + 1}" for i in range(features)], ["STEPS"])
    return json.dumps(doc).replace('["STEPS"]', inner[:-1] + ", " + model + "]")


def rbf_svc(support_vectors, features, seed=1):
    """A binary RBF SVC with `support_vectors` random support vectors."""
    rng = random.Random(seed)
    half = support_vectors // 2
    svs = [[round(rng.uniform(-1, 1), 4) for _ in range(features)] for _ in range(support_vectors)]
    dual = [round(rng.uniform(0, 1), 4) * (1 if i < half else -1) for i in range(support_vectors)]
    svc = {"type": "SVC", "kernel": "rbf", "gamma": 0.5, "coef0": 0.0, "degree": 3,
           "support_vectors": svs, "dual_coef": [dual], "intercept": [0.1],
           "n_support": [half, support_vectors - half]}
    return json.dumps(sklearn_document([f"f{i + 1}" for i in range(features)], [svc],
                                       task="classification", classes=[0, 1]))


def create_feature_table(conn, rows, features):
    """CREATE TABLE t (id, f1 .. f<features> real) with `rows` rows of uniform [-1, 1) values,
    vacuumed and analyzed: the table the runtime suites and bench score."""
    cols = ", ".join(f"f{i + 1} real" for i in range(features))
    vals = ", ".join("(random() * 2 - 1)::real" for _ in range(features))
    conn.execute(f"CREATE TABLE t (id int, {cols})")
    conn.execute(f"INSERT INTO t SELECT g, {vals} FROM generate_series(1, {rows}) g")
    conn.execute("VACUUM ANALYZE t")
