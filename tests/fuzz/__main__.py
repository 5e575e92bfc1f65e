"""Long-run entry point: `python -m tests.fuzz --programs 10000 [--seed N]` fuzzes that many programs and prints
each mismatch (shrunk program and difference) and the totals."""

import argparse
import time
import warnings

from hypothesis import HealthCheck, Phase, given, settings

from tests.fuzz import Program, check, programs


def main() -> None:
    """Parse the arguments and fuzz."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--programs", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # NumPy's and torch's warnings on empty or extreme values are not compared
    count = [0]
    start = time.perf_counter()

    @settings(max_examples=args.programs, deadline=None, database=None, derandomize=False,
              suppress_health_check=list(HealthCheck), phases=[Phase.generate, Phase.shrink])
    @given(programs)
    def fuzz(program: Program) -> None:
        count[0] += 1
        difference = check(program)
        assert difference is None, f"{program}\n{difference}"

    fuzz._hypothesis_internal_use_seed = args.seed
    try:
        fuzz()
        print(f"{count[0]} programs run, no mismatch ({time.perf_counter() - start:.0f} s)")
    except AssertionError as mismatch:
        print(f"MISMATCH after {count[0]} programs ({time.perf_counter() - start:.0f} s):\n{mismatch}")
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()
