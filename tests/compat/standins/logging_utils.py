"""torch._logging's test helpers: the logging tests are out of scope (scope.py)."""

from .common_utils import TestCase

LoggingTestCase = TestCase


def make_logging_test(**settings):
    def decorator(fn):
        return fn
    return decorator
