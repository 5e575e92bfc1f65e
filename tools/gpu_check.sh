#!/usr/bin/env bash
# The checks that need a GPU with CuPy, as one script for a lent machine: the op database and the device
# plumbing on CuPy's arrays (tests/test_array_api.py), then the GPU benchmark against torch CUDA
# (benchmarks/gpu.py). Usage: tools/gpu_check.sh OUTDIR [benchmark arguments]; logs land in OUTDIR.
set -u
out=${1:-.}
shift || true
export PYTHONUNBUFFERED=1
python3 -c "import cupy, numpy, torch; print('cupy', cupy.__version__, 'numpy', numpy.__version__, 'torch', \
torch.__version__, cupy.cuda.runtime.getDeviceProperties(0)['name'].decode())"
timeout "${TEST_TIMEOUT:-300}" python3 -m pytest tests/test_array_api.py -p no:cacheprovider -k "cupy or cuda" \
    -n "${WORKERS:-8}" --tb=short -rfEsx -vv -W ignore >"$out/tests.log" 2>&1
echo "tests: rc $?"; tail -n 15 "$out/tests.log"
timeout "${BENCH_TIMEOUT:-240}" python3 -m benchmarks.gpu --json "$out/gpu.json" "$@" >"$out/bench.log" 2>&1
echo "benchmark: rc $?"; grep -A 12 "^| case" "$out/bench.log"
