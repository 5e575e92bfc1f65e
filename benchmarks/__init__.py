"""The benchmark suite: retrograd against torch (and a hand-written NumPy floor) on the same workloads.

`python -m benchmarks` runs every workload on every library, each (workload, library) pair in a
fresh subprocess with the same thread settings, and prints a table of medians, ratios and peak
memory; the full run also writes `benchmarks/RESULTS.md`. `python -m benchmarks --quick` is the
smoke run CI uses (smaller sizes, fewer repeats, nothing written). `python -m benchmarks.profile`
profiles the per-op workloads on retrograd (see `benchmarks/PROFILE.md`); `python -m benchmarks.gap`
times the MLP step phase by phase against the NumPy floor, both in one process; `python -m
benchmarks.winograd` times a Winograd convolution against retrograd's im2col one (PROFILE.md, ninth round).

- `workloads.py`  what is measured: each workload builds its cases for one library;
- `floor.py`      the MLP step written by hand in NumPy (no graph), the floor for workload 3;
- `harness.py`    how it is measured: timing, memory meters, the child-process entry point;
- `report.py`     the driver: runs the children, renders the tables and RESULTS.md;
- `profile.py`, `gap.py`  where the time goes: by part of the machinery, and by phase of the MLP step;
- `winograd.py`   Winograd's F(2,3) along rows, stage by stage, against the im2col convolution.
"""
