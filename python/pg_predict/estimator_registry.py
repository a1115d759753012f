"""The registry of the estimator classes export() knows: each class name -> the function that
writes its step (a model) or its steps (a featurizer). The C++ side's table of the same classes
is src/importers/sklearn/estimator_registry.cpp.

The families' own tables (linear.py, trees.py, ..., multioutput.py) are collected here.
ensemble.py is the one family whose members are whole documents, written by export() itself,
and whose final estimators are looked up here: it imports export.py and this module, so it is
not imported here but adds its classes with add_models() when it is imported (the package's
__init__.py imports it). No module imports another that imports it back."""

from . import (calibration, cluster, featurizers, linear, mixture, multioutput, naive_bayes, neighbors,
               neural, svm, text, trees)

FEATURIZERS = {**featurizers.FEATURIZERS, **text.FEATURIZERS}

# Model class name -> export_<name>(est, n_features, ctx), the model's step (or steps).
MODELS = {**linear.CLASSIFIERS, **linear.REGRESSORS, **trees.CLASSIFIERS, **trees.REGRESSORS,
          **naive_bayes.CLASSIFIERS, **neural.CLASSIFIERS, **neural.REGRESSORS,
          **svm.CLASSIFIERS, **svm.REGRESSORS, **cluster.CLUSTERERS, **mixture.MIXTURES,
          **calibration.CLASSIFIERS, **neighbors.CLASSIFIERS, **neighbors.REGRESSORS,
          **multioutput.REGRESSORS, **multioutput.CLASSIFIERS}
# The models whose document lists their classes_ (multi-output classifiers, clusterers and
# mixtures write their classes otherwise).
CLASSIFIERS = (set(linear.CLASSIFIERS) | set(trees.CLASSIFIERS) | set(naive_bayes.CLASSIFIERS)
               | set(neural.CLASSIFIERS) | set(svm.CLASSIFIERS) | set(calibration.CLASSIFIERS)
               | set(neighbors.CLASSIFIERS))


def add_models(classifiers, regressors):
    """A family's tables that cannot be imported here (ensemble.py, see above)."""
    MODELS.update(classifiers)
    MODELS.update(regressors)
    CLASSIFIERS.update(classifiers)
