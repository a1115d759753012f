"""hummingbird.ml: convert() and what the tests import next to it."""

from . import constants  # noqa: F401
from .convert import convert  # noqa: F401
from .exceptions import MissingBackend, MissingConverter  # noqa: F401
