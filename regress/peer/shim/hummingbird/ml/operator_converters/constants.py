"""hummingbird.ml.operator_converters.constants: the keys the tests use."""

from ..constants import *  # noqa: F401,F403
