"""An XGBoost model (binary:logistic, numerical splits) written as LightGBM's model.txt.

LightGBM is not in Debian, so the bench's LightGBM model is XGBoost's lossguide model converted
here. XGBoost goes left on x < t with a float32 t, LightGBM on x <= t with a double: the
LightGBM threshold is the largest double below t, so for float32 inputs both send every row
the same way and pg_predict's LightGBM scores must equal XGBoost's."""

import math

import numpy as np


def to_lightgbm(doc, features):
    learner = doc["learner"]
    base = float(learner["learner_model_param"]["base_score"].strip("[]"))
    base_margin = math.log(base / (1 - base))
    trees = learner["gradient_booster"]["model"]["trees"]
    out = []
    for k, t in enumerate(trees):
        left, right = t["left_children"], t["right_children"]
        cond, feat, dleft = t["split_conditions"], t["split_indices"], t["default_left"]
        internal = [i for i in range(len(left)) if left[i] != -1]
        leaves = [i for i in range(len(left)) if left[i] == -1]
        inum = {n: i for i, n in enumerate(internal)}
        lnum = {n: i for i, n in enumerate(leaves)}
        ref = lambda n: inum[n] if left[n] != -1 else ~lnum[n]  # noqa: E731
        values = [cond[n] + (base_margin if k == 0 else 0.0) for n in leaves]
        lines = [f"Tree={k}", f"num_leaves={len(leaves)}", "num_cat=0"]
        if internal:
            # x < t (float32 t) <=> x <= the largest double below t, for every float32 x
            thr = [np.nextafter(np.float64(np.float32(cond[n])), -np.inf) for n in internal]
            lines += [
                "split_feature=" + " ".join(str(feat[n]) for n in internal),
                "threshold=" + " ".join(repr(float(v)) for v in thr),
                "decision_type=" + " ".join(str(8 | (2 if dleft[n] else 0)) for n in internal),
                "left_child=" + " ".join(str(ref(left[n])) for n in internal),
                "right_child=" + " ".join(str(ref(right[n])) for n in internal),
            ]
        lines += ["leaf_value=" + " ".join(repr(float(v)) for v in values), "shrinkage=1", ""]
        out.append("\n".join(lines) + "\n")
    header = ["tree", "version=v4", "num_class=1", "num_tree_per_iteration=1", "label_index=0",
              f"max_feature_idx={len(features) - 1}", "objective=binary sigmoid:1",
              "feature_names=" + " ".join(features),
              "feature_infos=" + " ".join("none" for _ in features), ""]
    return "\n".join(header) + "\n" + "".join(out) + "end of trees\n"
