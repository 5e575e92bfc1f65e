"""CI profile of the differential fuzzer: a fixed-seed hypothesis run of 500 short programs (tests/fuzz)."""

import warnings

from fuzz import Program, check, programs
from hypothesis import HealthCheck, given, seed, settings


@seed(20261121)
@settings(max_examples=500, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(programs)
def test_torch_and_retrograd_agree_on_random_programs(program: Program) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        difference = check(program)
    assert difference is None, difference
