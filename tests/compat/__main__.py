"""PyTorch's own autograd tests, run under torch 2.13 and under retrograd: `python tests/compat [options]`.

Each test runs twice, once per library, through the same stand-ins for torch's test internals
(`standins/`); only tests that pass under torch count, so the torch column is the control that
shows the stand-ins neither hide nor add failures. Prints, per file and per class: collected, out
of scope (`scope.py`), in scope, passing under torch, passing under retrograd. With `--check`, it
fails when an in-scope test that passes under torch fails under retrograd and is not listed in
`expected_failures.txt`, or when a listed test passes (the list is strict both ways).

The test files are read from `--tests PATH` (a PyTorch checkout or `../shared/pytorch-tests`), else
`$PYTORCH_TESTS`, else `shared/pytorch-tests` in a folder above the repository; where there are none
it says so and exits 0, unless `--fetch` (on by default under CI=true) downloads the v2.6.0 files
from Debian's source archive, checked by sha256.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
EXPECTED = os.path.join(HERE, "expected_failures.txt")
LIBS = ("torch", "retrograd")
WORKER_LIMIT_S = 1800

# The v2.6.0 release's test files as Debian ships them (pytorch_2.6.0+dfsg.orig.tar.xz), by sha256.
DEBIAN_SOURCE = ("http://deb.debian.org/debian/pool/main/p/pytorch/pytorch_2.6.0+dfsg.orig.tar.xz",
                 "099a9601bc40d67656e75735c44abedb0fbe92d08817852ab7472eebb7e6ddff")
FILES = {
    "test/test_autograd.py": "a8daf1cb687dad29cc1633c222465a9faecdf2073e137195a32d6d795db033c1",
    "test/autograd/test_functional.py": "c18286cdf06915836501ed05c9dd05c1e1c5442bc71f7de230352a28fc557cef",
    "test/autograd/test_complex.py": "97ecebcdc764a752b0964aede4e85b08371e60c0dc7f211dd592f5814fe237fd",
    "test/autograd/test_logging.py": "b8c134fa6e68f2b7bbc1b7cc715fa7f18b143391c3bf179dc8e15d590e2e6896",
    "test/expect/TestAutograd.test_function-x_grad_desc.expect":
        "c969b2f4413cad1b4aed80ed2e5fd05bc82fe2f582db8f4a61e7ca543a25a7a0",
    "test/expect/TestAutograd.test_function-y_grad_desc.expect":
        "7bc10749d2ce579f9732ed6eef12e7ccb021de9a9a34cad54968bfb091dc74ec",
}
CACHE = os.path.join(os.path.expanduser("~"), ".cache", "retrograd", "pytorch-tests-v2.6.0")


def find_tests(given: str | None) -> str | None:
    """The folder holding test/test_autograd.py, or None."""
    candidates = [given, os.environ.get("PYTORCH_TESTS")]
    folder = REPO
    while os.path.dirname(folder) != folder:
        folder = os.path.dirname(folder)
        candidates.append(os.path.join(folder, "shared", "pytorch-tests"))
    candidates.append(CACHE)
    for path in candidates:
        if path and os.path.isfile(os.path.join(path, "test", "test_autograd.py")):
            return path
    return None


def fetch(dest: str = CACHE) -> str:
    """Download Debian's source of torch 2.6.0, check it, and keep only the test files (into dest)."""
    url, digest = DEBIAN_SOURCE
    print(f"compat: fetching PyTorch's test files from {url}", flush=True)
    with urllib.request.urlopen(url, timeout=300) as response:
        data = response.read()
    if hashlib.sha256(data).hexdigest() != digest:
        raise SystemExit(f"compat: {url} does not have the expected sha256")
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:xz") as archive:
        members = {m.name.split("/", 1)[1]: m for m in archive.getmembers() if "/" in m.name}
        staging = tempfile.mkdtemp(dir=os.path.dirname(dest) if os.path.isdir(os.path.dirname(dest)) else None)
        for path, want in FILES.items():
            content = archive.extractfile(members[path]).read()
            if hashlib.sha256(content).hexdigest() != want:
                raise SystemExit(f"compat: {path} in {url} does not have the expected sha256")
            os.makedirs(os.path.join(staging, os.path.dirname(path)), exist_ok=True)
            with open(os.path.join(staging, path), "wb") as f:
                f.write(content)
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    try:
        os.replace(staging, dest)  # whole or not at all
    except OSError:  # another run (a second clone's CI) put the files there first: keep theirs if they check out
        shutil.rmtree(staging)
        if not _holds_the_files(dest):
            raise
    return dest


def _holds_the_files(folder: str) -> bool:
    """Whether `folder` has every test file with its expected sha256."""
    for path, want in FILES.items():
        try:
            with open(os.path.join(folder, path), "rb") as f:
                if hashlib.sha256(f.read()).hexdigest() != want:
                    return False
        except OSError:
            return False
    return True


def run_workers(tests: str, only: str) -> dict[str, dict]:
    """{lib: {test id: outcome}} from one worker process per library, run side by side."""
    with tempfile.TemporaryDirectory() as tmp:
        procs = {}
        for lib in LIBS:
            out = os.path.join(tmp, f"{lib}.json")
            log = open(os.path.join(tmp, f"{lib}.log"), "w")
            procs[lib] = (subprocess.Popen([sys.executable, os.path.join(HERE, "worker.py"), lib, tests, out, only],
                                           stdout=log, stderr=subprocess.STDOUT, cwd=tmp), out, log)
        results = {}
        for lib, (proc, out, log) in procs.items():
            proc.wait(timeout=WORKER_LIMIT_S)
            log.close()
            if proc.returncode != 0 or not os.path.exists(out):
                with open(log.name) as f:
                    sys.stderr.write(f.read()[-5000:])
                raise SystemExit(f"compat: the {lib} run stopped (exit {proc.returncode})")
            with open(out) as f:
                results[lib] = json.load(f)
    return results


def read_expected() -> dict[str, str]:
    """{test id: reason} from expected_failures.txt (`file::Class::test  # reason` lines)."""
    expected = {}
    with open(EXPECTED) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                test_id, _, reason = line.partition("#")
                expected[test_id.strip()] = reason.strip()
    return expected


def write_expected(results: dict[str, dict], old: dict[str, str]) -> None:
    """expected_failures.txt with exactly today's failures."""
    torch_tests, ours = results["torch"]["tests"], results["retrograd"]["tests"]
    failing = sorted(t for t, o in torch_tests.items()
                     if o["status"] == "pass" and o["scope"] is None and ours[t]["status"] != "pass")
    with open(EXPECTED) as f:
        header = [line for line in f if line.startswith("#")]
    with open(EXPECTED + ".tmp", "w") as f:
        f.writelines(header)
        f.writelines(f"{t}  # {old.get(t) or ours[t]['message']}\n" for t in failing)
    os.replace(EXPECTED + ".tmp", EXPECTED)


def table(results: dict[str, dict]) -> str:
    """The per-file and per-class counts."""
    torch_tests, ours = results["torch"]["tests"], results["retrograd"]["tests"]
    rows = collections.defaultdict(collections.Counter)
    for test_id, outcome in torch_tests.items():
        file, cls, _ = test_id.split("::")
        for key in (file, f"  {cls}"):
            row = rows[(file, key)]
            row["collected"] += 1
            row["out of scope"] += outcome["scope"] is not None
            row["in scope"] += outcome["scope"] is None
            row["pass torch"] += outcome["status"] == "pass"
            row["pass retrograd"] += outcome["status"] == "pass" and ours[test_id]["status"] == "pass"
    columns = ["collected", "out of scope", "in scope", "pass torch", "pass retrograd"]
    lines = [f"{'file / class':<44}" + "".join(f"{c:>15}" for c in columns)]
    total = collections.Counter()
    for (file, key), row in sorted(rows.items(), key=lambda kv: (kv[0][0], kv[0][1] != kv[0][0], kv[0][1])):
        lines.append(f"{key:<44}" + "".join(f"{row[c]:>15}" for c in columns))
        if key == file:
            total.update(row)
    lines.append(f"{'total':<44}" + "".join(f"{total[c]:>15}" for c in columns))
    share = total["pass retrograd"] / max(total["pass torch"], 1)
    lines.append(f"retrograd passes {total['pass retrograd']} of the {total['pass torch']} in-scope tests that pass "
                 f"under torch ({share:.0%})")
    return "\n".join(lines)


def check(results: dict[str, dict], expected: dict[str, str]) -> list[str]:
    """What breaks the expected-failure list's promise, one line each (empty when it holds)."""
    torch_tests, ours = results["torch"]["tests"], results["retrograd"]["tests"]
    counted = {t for t, o in torch_tests.items() if o["status"] == "pass" and o["scope"] is None}
    failing = {t for t in counted if ours[t]["status"] != "pass"}
    problems = [f"fails and is not listed: {t}\n    {ours[t]['message']}" for t in sorted(failing - set(expected))]
    problems += [f"listed but passes: {t}" for t in sorted(set(expected) & (counted - failing))]
    problems += [f"listed but not an in-scope test that passes under torch: {t}"
                 for t in sorted(set(expected) - counted)]
    return problems


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python tests/compat", description=__doc__.split("\n\n")[0])
    parser.add_argument("--tests", help="folder holding test/test_autograd.py (a PyTorch checkout)")
    parser.add_argument("--check", action="store_true", help="fail unless expected_failures.txt is exact")
    parser.add_argument("--fetch", action="store_true", default=os.environ.get("CI") == "true",
                        help="download the test files when none are found (default under CI=true)")
    parser.add_argument("-k", dest="only", default="", help="only tests whose id contains this text")
    parser.add_argument("--failures", action="store_true", help="list retrograd's failures with their messages")
    parser.add_argument("--update", action="store_true",
                        help="rewrite expected_failures.txt to today's failures (kept reasons stay; new ones get the "
                             "error retrograd raises)")
    args = parser.parse_args(argv)
    tests = find_tests(args.tests) or (fetch() if args.fetch else None)
    if tests is None:
        print("compat: PyTorch's test files were not found (give --tests PATH, set PYTORCH_TESTS, or --fetch): "
              "skipped")
        return 0
    print(f"compat: PyTorch's tests from {tests}", flush=True)
    results = run_workers(tests, args.only)
    print(table(results))
    if args.failures:
        torch_tests, ours = results["torch"]["tests"], results["retrograd"]["tests"]
        for test_id, outcome in sorted(ours.items()):
            if outcome["status"] != "pass" and torch_tests[test_id]["status"] == "pass":
                print(f"{test_id}  # {outcome['message']}")
    if args.update and not args.only:
        write_expected(results, read_expected())
    if args.check and not args.only:
        problems = check(results, read_expected())
        for problem in problems:
            print(problem)
        if problems:
            return 1
        print("compat: the expected-failure list is exact")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
