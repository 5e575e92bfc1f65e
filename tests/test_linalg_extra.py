"""linalg.tensorinv / tensorsolve / vecdot / vander / diagonal and cholesky_inverse: argument errors against
torch 2.13 (values, gradients and grad_fn names are checked by their op-database rows)."""

from __future__ import annotations

import pytest
import torch

import retrograd

CALLS = [
    lambda lib: lib.linalg.vecdot(lib.ones(3).long(), lib.ones(3).long()),
    lambda lib: lib.linalg.vecdot(lib.ones(3), lib.ones(3).double()),
    lambda lib: lib.linalg.vander(lib.tensor(1.0)),
    lambda lib: lib.linalg.vander(lib.ones(3), N=1),
    lambda lib: lib.linalg.vander(lib.ones(3).bool()),
    lambda lib: lib.linalg.tensorinv(lib.ones(4, 6, 8, 3), ind=0),
    lambda lib: lib.linalg.tensorinv(lib.ones(4, 6, 5, 3)),
    lambda lib: lib.linalg.tensorsolve(lib.ones(4, 6, 8, 3), lib.ones(3, 6)),
    lambda lib: lib.cholesky_inverse(lib.ones(3, 4)),
    lambda lib: lib.cholesky_inverse(lib.ones(3)),
    lambda lib: lib.linalg.householder_product(lib.ones(3), lib.ones(1)),
    lambda lib: lib.linalg.householder_product(lib.ones(3, 4), lib.ones(2)),
    lambda lib: lib.linalg.householder_product(lib.ones(4, 3), lib.ones(4)),
    lambda lib: lib.linalg.householder_product(lib.ones(4, 3), lib.ones(1, 2)),
    lambda lib: lib.linalg.householder_product(lib.ones(4, 3), lib.ones(2).double()),
    lambda lib: lib.ormqr(lib.ones(4, 3), lib.ones(3), lib.ones(5, 2)),
    lambda lib: lib.ormqr(lib.ones(4, 3), lib.ones(2), lib.ones(4, 2)),
    lambda lib: lib.ormqr(lib.ones(4, 3), lib.ones(2), lib.ones(2, 4), left=False),
    lambda lib: lib.ormqr(lib.ones(4, 3), lib.ones(3), lib.ones(2, 5), left=False),
    lambda lib: lib.ormqr(lib.ones(4), lib.ones(3), lib.ones(4, 2)),
    lambda lib: lib.ormqr(lib.ones(4, 3), lib.ones(3), lib.ones(4)),
    lambda lib: lib.ormqr(lib.ones(4, 3).double(), lib.ones(3), lib.ones(4, 2).double()),
]


def failure(lib, call):
    with pytest.raises(Exception) as info:
        call(lib)
    return type(info.value).__name__, str(info.value)


@pytest.mark.parametrize("call", CALLS, ids=range(len(CALLS)))
def test_errors_match_torch(call):
    assert failure(retrograd, call) == failure(torch, call)


def test_singular_tensorinv_raises_linalg_error():
    with pytest.raises(retrograd.linalg.LinAlgError, match="the input matrix is singular"):
        retrograd.linalg.tensorinv(retrograd.zeros(2, 2, 2, 2))
