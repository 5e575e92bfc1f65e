"""`python -m benchmarks`: run the suite (see benchmarks/__init__.py and `--help`)."""

from .report import main

main()
