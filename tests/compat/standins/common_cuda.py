"""CUDA facts for the tests: the compatibility run is CPU-only."""

TEST_CUDA = False
TEST_MULTIGPU = False
