"""Shared test set-up: the op database is importable as `opdb`, torch is the oracle."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
