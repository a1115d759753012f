"""An XGBoost model (Booster.save_model JSON) written as an ONNX TreeEnsembleClassifier /
TreeEnsembleRegressor with python3-onnx's helper, the way onnxmltools converts it (onnxmltools is
not in Debian): BRANCH_LT nodes (XGBoost goes left when x < threshold), the default direction as
missing_value_tracks_true, leaf values as weights, base_score as base_values (in margin space),
LOGISTIC for binary:logistic.

    /usr/bin/python3 bench/xgb_to_onnx.py model.json model.onnx
"""

import json
import math
import sys

from onnx import TensorProto, helper


def convert(model_json, features):
    learner = model_json["learner"]
    objective = learner["objective"]["name"]
    base = float(learner["learner_model_param"]["base_score"])
    trees = learner["gradient_booster"]["model"]["trees"]
    nodes = {k: [] for k in ("treeids", "nodeids", "featureids", "modes", "values", "truenodeids",
                             "falsenodeids", "missing_value_tracks_true")}
    leaves = {k: [] for k in ("treeids", "nodeids", "ids", "weights")}
    for t, tree in enumerate(trees):
        left, right = tree["left_children"], tree["right_children"]
        for i in range(len(left)):
            leaf = left[i] == -1
            nodes["treeids"].append(t)
            nodes["nodeids"].append(i)
            nodes["featureids"].append(0 if leaf else tree["split_indices"][i])
            nodes["modes"].append("LEAF" if leaf else "BRANCH_LT")
            nodes["values"].append(0.0 if leaf else tree["split_conditions"][i])
            nodes["truenodeids"].append(0 if leaf else left[i])
            nodes["falsenodeids"].append(0 if leaf else right[i])
            nodes["missing_value_tracks_true"].append(0 if leaf else int(tree["default_left"][i]))
            if leaf:
                leaves["treeids"].append(t)
                leaves["nodeids"].append(i)
                leaves["ids"].append(0)
                leaves["weights"].append(tree["split_conditions"][i])
    attrs = {f"nodes_{k}": v for k, v in nodes.items()}
    x = helper.make_tensor_value_info("input", TensorProto.FLOAT, [None, len(features)])
    if objective == "binary:logistic":
        attrs.update({f"class_{k}": v for k, v in leaves.items()})
        node = helper.make_node("TreeEnsembleClassifier", ["input"], ["label", "probabilities"],
                                domain="ai.onnx.ml", classlabels_int64s=[0, 1], post_transform="LOGISTIC",
                                base_values=[math.log(base / (1 - base))], **attrs)
        outputs = [helper.make_tensor_value_info("label", TensorProto.INT64, [None]),
                   helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [None, 2])]
    elif objective == "reg:squarederror":
        attrs.update({f"target_{k}": v for k, v in leaves.items()})
        node = helper.make_node("TreeEnsembleRegressor", ["input"], ["variable"], domain="ai.onnx.ml",
                                n_targets=1, base_values=[base], **attrs)
        outputs = [helper.make_tensor_value_info("variable", TensorProto.FLOAT, [None, 1])]
    else:
        raise ValueError(f"objective {objective} is not converted here")
    graph = helper.make_graph([node], "xgboost", [x], outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15), helper.make_opsetid("ai.onnx.ml", 3)])


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        doc = json.load(f)
    names = doc["learner"].get("feature_names") or [f"f{i}" for i in range(int(doc["learner"]["learner_model_param"]["num_feature"]))]
    with open(sys.argv[2], "wb") as f:
        f.write(convert(doc, names).SerializeToString())
