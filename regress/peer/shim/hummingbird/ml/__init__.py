"""hummingbird.ml: convert() and what the tests import next to it."""

from . import constants  # noqa: F401
from . import operator_converters  # noqa: F401
from .operator_converters import constants as _operator_constants  # noqa: F401  (hummingbird.ml.operator_converters.constants.X)
from .convert import convert  # noqa: F401
from .exceptions import MissingBackend, MissingConverter  # noqa: F401
