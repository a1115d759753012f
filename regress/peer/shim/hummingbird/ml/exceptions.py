"""Hummingbird's exception types (the tests assert on them)."""


class MissingConverter(RuntimeError):
    """pg_predict cannot deploy the model: its exporter or create_model refused it."""


class MissingBackend(RuntimeError):
    """A backend this stand-in does not serve."""


class ConstantError(TypeError):
    pass
