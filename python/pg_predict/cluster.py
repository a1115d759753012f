"""Clustering: KMeans, MiniBatchKMeans and MeanShift predict the nearest cluster center,
Birch the label of the nearest subcluster center. Exported as a classifier whose classes are
the cluster labels (0..k-1 for the centers), without probabilities."""

import numpy as np

from ._common import floats, ints


def export_kmeans(est, n_features, ctx):
    centers = est.cluster_centers_
    if centers.shape[1] != n_features:
        ctx.refuse(est, None, f"cluster_centers_ has {centers.shape[1]} columns, the vector it "
                   f"reads has {n_features}")
    return {"type": type(est).__name__, "cluster_centers": floats(centers)}


def export_birch(est, n_features, ctx):
    centers = est.subcluster_centers_
    if centers.shape[1] != n_features:
        ctx.refuse(est, None, f"subcluster_centers_ has {centers.shape[1]} columns, the vector it "
                   f"reads has {n_features}")
    labels = np.searchsorted(classes(est), est.subcluster_labels_)  # indices into classes
    return {"type": "Birch", "subcluster_centers": floats(centers),
            "subcluster_labels": ints(labels)}


def classes(est):
    if hasattr(est, "subcluster_labels_"):  # Birch: the labels its global clustering gave
        return [int(c) for c in np.unique(est.subcluster_labels_)]
    return list(range(len(est.cluster_centers_)))


CLUSTERERS = {"KMeans": export_kmeans, "MiniBatchKMeans": export_kmeans,
              "MeanShift": export_kmeans, "Birch": export_birch}
