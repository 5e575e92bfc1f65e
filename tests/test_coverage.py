"""Every public op has a row in the op database (or a stated reason why it needs none)."""

from opdb import all_ops

import retrograd

# name -> why it has no op-database row
EXEMPT = {
    "conj_physical": "identity on real tensors; covered by the complex rows",
    "is_conj": "a predicate on torch's conjugate bit: tests/test_complex.py compares it with torch's",
    "is_neg": "a predicate on torch's negative bit: tests/test_complex.py compares it with torch's",
    "as_strided_scatter": "torch's gradient of self is wrong (its own gradcheck fails): tests/test_view_copies.py "
                          "compares the values with torch and the gradients with finite differences",
}


def covered_names() -> set[str]:
    names = set()
    for info in all_ops():
        names.add(info.name.split(".")[-1])
        names.update(info.aliases)
    return names


def public_ops() -> set[str]:
    ops = retrograd.ops
    return set(ops.__all__) | set(ops.FUNCTIONAL) | set(ops.LINALG) | set(ops.FFT) | set(ops.SPECIAL)


def test_every_public_op_has_a_row() -> None:
    missing = sorted(public_ops() - covered_names() - set(EXEMPT))
    assert not missing, f"public ops without an op-database row: {missing}"
