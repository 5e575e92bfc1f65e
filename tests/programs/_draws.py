"""Launcher for tests/test_programs.py: `python _draws.py record DRAWS script.py ARGS` runs a program under torch and
writes what its random calls drew to DRAWS: randperm and randint, wherever called (the draws that order and pick
the data: DataLoader shuffling, samplers, random_split, batch offsets), and the program's own torch.randn, rand,
randn_like and rand_like (noise, a VAE's samples); `python _draws.py replay DRAWS script.py ARGS` runs it under
`retrograd.run`, each call answered with torch's draw in turn after checking that it asks for the same shape.
retrograd's generator is NumPy's, not torch's Mersenne Twister, so only so do both runs see the same numbers; the
program itself runs unchanged. (Initial weights are shared by the programs' WEIGHTS files instead.)"""

import functools
import json
import os
import runpy
import sys

PATCHED = ("randperm", "randint", "randn", "rand", "randn_like", "rand_like")


def record(path, script, args):
    import torch
    import torch.utils.data.dataset as dataset_module

    draws = []

    def recording(function):
        @functools.wraps(function)
        def wrapper(*a, **k):
            out = function(*a, **k)
            draws.append((torch.view_as_real(out) if out.is_complex() else out).tolist())  # JSON has no complex
            return out
        return wrapper

    for name in PATCHED:
        setattr(torch, name, recording(getattr(torch, name)))
    dataset_module.randperm = torch.randperm  # random_split calls its own imported name
    sys.argv = [script, *args]
    sys.path[0] = os.path.dirname(os.path.abspath(script))  # as `python script.py` sets it
    try:
        runpy.run_path(script, run_name="__main__")
    finally:
        with open(path, "w") as f:
            json.dump(draws, f)


def replay(path, script, args):
    import retrograd
    import retrograd._creation as creation
    from retrograd import run

    with open(path) as f:
        draws = iter(json.load(f))

    def replaying(function):
        @functools.wraps(function)
        def wrapper(*a, **k):
            out = function(*a, **k)
            if out.is_complex():
                theirs = retrograd.view_as_complex(retrograd.tensor(next(draws), dtype=out.real.dtype))
            else:
                theirs = retrograd.tensor(next(draws), dtype=out.dtype)
            if theirs.shape != out.shape:
                raise AssertionError(f"{function.__name__} drew {tuple(out.shape)}, torch drew {tuple(theirs.shape)}")
            return theirs.requires_grad_(out.requires_grad)  # randn(..., requires_grad=True): a leaf to train
        return wrapper

    creation.randperm, creation.randint = replaying(creation.randperm), replaying(creation.randint)  # samplers' too
    for name in PATCHED:
        setattr(retrograd, name, getattr(creation, name) if name in ("randperm", "randint")
                else replaying(getattr(retrograd, name)))
    sys.exit(run.main([script, *args]))


if __name__ == "__main__":
    {"record": record, "replay": replay}[sys.argv[1]](sys.argv[2], sys.argv[3], sys.argv[4:])
