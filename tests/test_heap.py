"""glibc's malloc thresholds set at import (Note [heap kept between steps] in retrograd/_heap.py): set under glibc
only, and left alone when the user opts out or has chosen malloc's thresholds through the environment."""

import platform

import pytest

from retrograd import _heap


def test_thresholds_are_set_under_glibc_only(monkeypatch):
    for name in (*_heap._MALLOC_VARIABLES, "RETROGRAD_KEEP_HEAP"):
        monkeypatch.delenv(name, raising=False)
    assert _heap.keep_heap() is (platform.libc_ver()[0] == "glibc")


@pytest.mark.parametrize("name, value", [("RETROGRAD_KEEP_HEAP", "0"), ("MALLOC_TRIM_THRESHOLD_", "1048576"),
                                         ("MALLOC_TOP_PAD_", "0")])
def test_users_choice_of_malloc_is_left_alone(monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    assert _heap.keep_heap() is False
