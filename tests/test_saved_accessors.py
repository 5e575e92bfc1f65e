"""Every node the op database's samples record names its saved values as torch's node does (`_saved_<name>`: the
names of derivatives.yaml, generated from each row's inputs, outputs and parameters), except for the differences
listed in saved_accessor_differences.txt, each with what retrograd saves and torch does not and the reverse. The
list is exact: a difference that goes away, or a new one, fails (regenerate with `python
tests/test_saved_accessors.py --write` and read the diff)."""

from __future__ import annotations

import os
import sys
import warnings

import torch
from test_ops import CASES, run

import retrograd

LIST = os.path.join(os.path.dirname(os.path.abspath(__file__)), "saved_accessor_differences.txt")


def _saved_names(node) -> set[str]:
    return {a for a in dir(node) if a.startswith("_saved_")}


def differences() -> tuple[dict[str, str], int, int]:
    """({'<op> <node>': 'ours: ... | torch: ...'}, nodes compared, nodes with torch's names) over the samples'
    first outputs whose node has torch's node name, in float64."""
    found: dict[str, tuple[set[str], set[str]]] = {}
    compared = same = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for case in CASES:
            info, sample = case.values
            ours, theirs = run(retrograd, info, sample, "float64")[2], run(torch, info, sample, "float64")[2]
            nodes = [(o.grad_fn, t.grad_fn) for o, t in zip(ours, theirs) if o.grad_fn is not None
                     and t.grad_fn is not None and o.grad_fn.name() == t.grad_fn.name()][:1]
            for mine, their in nodes:
                compared += 1
                extra, missing = _saved_names(mine) - _saved_names(their), _saved_names(their) - _saved_names(mine)
                if not extra and not missing:
                    same += 1
                    continue
                ours_only, torch_only = found.setdefault(f"{info.name} {their.name()}", (set(), set()))
                ours_only |= extra
                torch_only |= missing
    return {key: f"ours: {' '.join(sorted(extra)) or '-'} | torch: {' '.join(sorted(missing)) or '-'}"
            for key, (extra, missing) in found.items()}, compared, same


def _listed() -> dict[str, str]:
    with open(LIST) as f:
        lines = [line.rstrip("\n") for line in f if line.strip() and not line.startswith("#")]
    return dict(line.split(" = ", 1) for line in lines)


def test_saved_accessors_are_torchs_but_the_listed():
    found = differences()[0]
    listed = _listed()
    gone = sorted(set(listed) - set(found))
    new = sorted(set(found) - set(listed))
    changed = sorted(k for k in set(found) & set(listed) if found[k] != listed[k])
    assert not new, f"saved accessors that differ from torch's and are not listed: {[(k, found[k]) for k in new]}"
    assert not changed, f"listed differences that changed: {[(k, listed[k], found[k]) for k in changed]}"
    assert not gone, f"listed differences that are gone (remove them from the list): {gone}"


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    found, compared, same = differences()
    with open(LIST, "w") as f:
        f.write(f"# Saved accessors that differ from torch's: {len(found)} (op, node) pairs; {same} of {compared}\n"
                "# sampled nodes have torch's names exactly. Written by tests/test_saved_accessors.py --write.\n")
        f.writelines(f"{key} = {value}\n" for key, value in sorted(found.items()))
    print(f"{same} of {compared} nodes have torch's saved accessors; {len(found)} (op, node) pairs listed")
