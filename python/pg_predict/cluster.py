"""Clustering: KMeans and MiniBatchKMeans predict the nearest cluster center. Exported as a
classifier whose classes are the cluster indices 0..k-1, without probabilities."""

from ._common import floats


def export_kmeans(est, n_features, ctx):
    centers = est.cluster_centers_
    if centers.shape[1] != n_features:
        ctx.refuse(est, None, f"cluster_centers_ has {centers.shape[1]} columns, the vector it "
                   f"reads has {n_features}")
    return {"type": type(est).__name__, "cluster_centers": floats(centers)}


def classes(est):
    return list(range(len(est.cluster_centers_)))


CLUSTERERS = {"KMeans": export_kmeans, "MiniBatchKMeans": export_kmeans}
