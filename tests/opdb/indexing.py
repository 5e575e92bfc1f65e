"""Op database rows: indexing, gather and scatter (OPS.md G).

`x[key]` and `x[key] = v` are rows named by `aliases=("getitem",)` / `("setitem",)`, one per kind
of key, called through `call=` (index tensors are built in each library from `C` arguments).
setitem rows write into a clone, so both the clone's history and the value get gradients.
Duplicate indices appear wherever torch defines them (index/gather/scatter_add/index_add/put
accumulate); where a duplicate write is "last one wins" (index_put, setitem without accumulate)
torch still sends the gradient to every duplicate, so those samples skip finite differences.
"""

from __future__ import annotations

import numpy as np

from . import C, OpInfo, Sample, distinct, noncontig, rand


def I(*values, dtype=np.int64):  # noqa: E743, N802 - reads like torch.tensor([...]) in a key
    return C(np.array(values[0] if len(values) == 1 else values, dtype=dtype))


def B(*values):  # noqa: N802
    return C(np.array(values[0] if len(values) == 1 else values, dtype=bool))


def getitem(name: str, key, shape=(3, 4, 5), extra=(), noncontiguous=True):
    """A getitem row: x[key(m, *extra)] on a random x of `shape` (and a non-contiguous copy)."""
    def samples(rng):
        out = [Sample((rand(rng, *shape), *extra), name=name)]
        if noncontiguous and len(shape) > 1:
            out.append(Sample((noncontig(rand(rng, *shape)), *extra), name=name + "_noncontig"))
        return out
    return OpInfo("getitem", samples, call=lambda m, x, *a: x[key(*a)], aliases=("getitem",))


def setitem(name: str, key, value, shape=(3, 4, 5), extra=(), fd=True):
    """A setitem row: y = x.clone(); y[key] = value (an array: it gets a gradient too)."""
    def samples(rng):
        v = value(rng) if callable(value) else value
        return [Sample((rand(rng, *shape), v, *extra), name=name, gradcheck=fd)]

    def call(m, x, v, *a):
        y = x.clone()
        y[key(*a)] = v
        return y
    return OpInfo("setitem", samples, call=call, aliases=("setitem",))


def shaped(*shape):
    return lambda rng: rand(rng, *shape)


def cases(*items):
    """A samples function from (name, args..., [kwargs]) tuples, args taken as they are."""
    def make(rng):
        out = []
        for name, *args in items:
            kwargs = args.pop() if args and isinstance(args[-1], dict) else {}
            out.append(Sample(tuple(a(rng) if callable(a) else a for a in args), kwargs, name))
        return out
    return make


OPS = [
    # ---- x[key] ---------------------------------------------------------------------------
    getitem("int", lambda: 1),
    getitem("neg_int", lambda: -1),
    getitem("int_int", lambda: (0, 2)),
    getitem("slice", lambda: slice(1, None)),
    getitem("full_slice", lambda: slice(None)),
    getitem("full_slices", lambda: (slice(None), slice(None))),
    getitem("step", lambda: (slice(None), slice(None, None, 2))),
    getitem("out_of_range_slice", lambda: slice(5, 10)),
    getitem("empty_slice", lambda: (slice(None), slice(2, 2))),
    getitem("none", lambda: None),
    getitem("none_mid", lambda: (slice(None), None)),
    getitem("ellipsis", lambda: ...),
    getitem("ellipsis_int", lambda: (..., 0)),
    getitem("two_ellipses", lambda: (..., 0, ...)),
    getitem("slice_none_int", lambda: (slice(1, None), None, 2)),
    getitem("list", lambda: [0, 2]),
    getitem("duplicates", lambda: [0, 0, 2, 0]),
    getitem("empty_list", lambda: []),
    getitem("tensor", lambda i: i, extra=(I([2, 0, 2]),)),
    getitem("tensor_0d", lambda i: i, extra=(I(1),)),
    getitem("tensor_0d_in_tuple", lambda i: (i, slice(1, None)), extra=(I(1),)),
    getitem("int32_tensor", lambda i: i, extra=(I([1, 1], dtype=np.int32),)),
    getitem("tensor_2d", lambda i: i, extra=(I([[0, 1], [2, 0]]),)),
    getitem("two_tensors", lambda i, j: (i, j), extra=(I([0, 1, 1]), I([3, 3, 0]))),
    getitem("broadcast_tensors", lambda i, j: (i, j), extra=(I([[0], [1]]), I([0, 1, 2]))),
    getitem("split_advanced", lambda i, j: (i, slice(None), j), extra=(I([0, 2]), I([1, 4]))),
    getitem("slice_none_list", lambda: (slice(1, None), None, [0, 2])),
    getitem("int_then_list", lambda: (0, [1, 1])),
    getitem("list_then_int", lambda: ([2, 0], 1)),
    getitem("ellipsis_list", lambda: (..., [4, 0])),
    getitem("nested_list", lambda: [[0, 1], [1, 2]]),
    getitem("true", lambda: True),
    getitem("false", lambda: False),
    getitem("int_true", lambda: (0, True)),
    getitem("mask", lambda mk: mk, extra=(B([True, False, True]),)),
    getitem("mask_2d", lambda mk: mk, extra=(B([[True, False, True, False]] * 2 + [[False] * 4]),)),
    getitem("mask_after_slice", lambda mk: (slice(None), mk), extra=(B([False, True, True, False]),)),
    getitem("mask_full", lambda mk: mk, extra=(C(np.arange(60).reshape(3, 4, 5) % 3 == 0),)),
    getitem("byte_mask", lambda mk: mk, extra=(I([1, 0, 1], dtype=np.uint8),)),
    getitem("bool_tensor_0d", lambda mk: mk, extra=(B(True),)),
    getitem("0d_none", lambda: None, shape=()),
    getitem("0d_ellipsis", lambda: ..., shape=()),
    getitem("0d_true", lambda: True, shape=()),
    getitem("1d_int", lambda: 2, shape=(4,)),
    getitem("size0_dim", lambda: (slice(None), [0]), shape=(0, 3)),

    # ---- x[key] = value -------------------------------------------------------------------
    setitem("int_tensor", lambda: 0, shaped(4, 5)),
    setitem("slice_broadcast", lambda: slice(1, None), shaped(5)),
    setitem("scalar", lambda: (0, 1), 2.5),
    setitem("0d_value", lambda: (1, 2, 3), shaped()),
    setitem("leading_ones", lambda: 1, shaped(1, 4, 5)),
    setitem("step", lambda: (slice(None), slice(None, None, 2)), shaped(3, 2, 1)),
    setitem("none", lambda: None, shaped(5)),
    setitem("ellipsis", lambda: ..., shaped(4, 5)),
    setitem("ellipsis_scalar", lambda: ..., -1.0),
    setitem("true", lambda: True, shaped(5)),
    setitem("list", lambda: [0, 2], shaped(2, 4, 5)),
    setitem("list_scalar", lambda: [2], 3.0),
    setitem("duplicates", lambda: [0, 0], shaped(2, 1, 5), fd=False),
    setitem("tensor_index", lambda i: i, shaped(4, 5), extra=(I([1]),)),
    setitem("full_slice_list", lambda: (slice(None), [0, 3]), shaped(2, 5)),
    setitem("int_list", lambda: (0, [1, 2]), shaped(2, 5)),
    setitem("list_int", lambda: ([0, 1], 1), shaped(5)),
    setitem("slice_list", lambda: (slice(1, None), [0]), shaped(2, 1, 5)),
    setitem("mask", lambda mk: mk, shaped(5), extra=(C(np.array([[True] * 4, [False] * 4, [True, False] * 2])),)),
    setitem("mask_scalar", lambda mk: mk, 0.0, extra=(B([False, True, True]),)),
    setitem("false", lambda: False, shaped(5)),

    # ---- advanced indexing as functions ---------------------------------------------------
    OpInfo("index_put", cases(
        ("one", shaped(3, 4), [I([0, 2])], shaped(2, 4)),
        ("accumulate_duplicates", shaped(3, 4), [I([0, 2, 0])], shaped(3, 1), {"accumulate": True}),
        ("two_indices", shaped(3, 4), [I([0, 1]), I([3, 3])], shaped(2)),
        ("0d_value", shaped(3, 4), [I([1])], shaped()),
        ("mask", shaped(3, 4), [B([True, False, True])], shaped(4)),
        ("accumulate_mask", shaped(3, 4), [C(np.eye(3, 4, dtype=bool))], shaped(3), {"accumulate": True}),
    )),
    OpInfo("index_put", lambda rng: [Sample((rand(rng, 3, 4), [I([0, 0])], rand(rng, 2, 4)), name="duplicates",
                                            gradcheck=False)], aliases=("index_put_duplicates",)),
    OpInfo("index_put_", cases(("accumulate", shaped(3, 4), [I([1, 1])], shaped(4), True)),
           call=lambda m, x, idx, v, acc: x.clone().index_put_(idx, v, acc), aliases=("index_put_",)),
    OpInfo("index_select", cases(
        ("dim0", shaped(3, 4), 0, I([2, 0])), ("duplicates", shaped(3, 4), 1, I([1, 1, 3, 1])),
        ("neg_dim", shaped(2, 3, 4), -1, I([0, 3])), ("empty", shaped(3, 4), 1, I([], dtype=np.int64)),
        ("int32", shaped(3, 4), 0, I([1], dtype=np.int32)), ("0d_index", shaped(3, 4), 1, I(2)),
        ("0d_input", shaped(), 0, I([0])), ("noncontig", lambda rng: noncontig(rand(rng, 4, 3)), 1, I([2, 0])),
    ), method=True),
    OpInfo("index_add", cases(
        ("duplicates", shaped(3, 4), 1, I([0, 0, 3]), shaped(3, 3)),
        ("alpha", shaped(3, 4), 0, I([2, 0]), shaped(2, 4), {"alpha": -1.5}),
        ("neg_dim", shaped(2, 3), -1, I([1]), shaped(2, 1)),
        ("0d", shaped(), 0, I([0]), shaped()),
    ), method=True),
    OpInfo("index_copy", cases(
        ("dim1", shaped(3, 4), 1, I([3, 0]), shaped(3, 2)), ("dim0", shaped(3, 4), 0, I([1]), shaped(1, 4)),
        ("neg_dim", shaped(2, 3, 2), -2, I([2, 1, 0]), shaped(2, 3, 2)),
    ), method=True),
    OpInfo("index_fill", cases(
        ("scalar", shaped(3, 4), 1, I([0, 2]), 1.5), ("duplicates", shaped(3, 4), 0, I([1, 1]), -2.0),
        ("tensor_value", shaped(3, 4), 1, I([3, 3, 0]), shaped()), ("negative_index", shaped(3, 4), 1, I([-1]), 0.5),
    ), method=True),

    # ---- gather / scatter -----------------------------------------------------------------
    OpInfo("gather", cases(
        ("dim1", shaped(3, 4), 1, I([[0, 0, 3], [1, 2, 1]])), ("dim0", shaped(3, 4), 0, I([[2, 0, 1, 1]])),
        ("neg_dim", shaped(2, 3, 2), -2, I([[[0, 0]], [[2, 1]]])), ("0d", shaped(), 0, I(0)),
        ("empty", shaped(3, 4), 1, C(np.zeros((3, 0), dtype=np.int64))),
    ), method=True),
    OpInfo("scatter", cases(
        ("src", shaped(3, 4), 1, I([[3, 0], [1, 2]]), shaped(2, 2)),
        ("src_larger", shaped(3, 4), 0, I([[2, 0, 1, 1]]), shaped(1, 4)),
        ("neg_dim", shaped(2, 3), -1, I([[2], [0]]), shaped(2, 1)),
    ), method=True),
    OpInfo("scatter", cases(
        ("value", shaped(3, 4), 1, I([[3, 3], [0, 1]]), 2.5),
        ("value_kw", shaped(3, 4), 0, I([[1, 2]]), {"value": -1.0}),
    ), aliases=("scatter_value",)),
    OpInfo("scatter", cases(
        ("add", shaped(3, 4), 1, I([[0, 0]]), shaped(1, 2), {"reduce": "add"}),
        ("multiply_value", shaped(3, 4), 0, I([[1, 1]]), 2.0, {"reduce": "multiply"}),
    ), differentiable=False, aliases=("scatter_reduce_argument",)),
    OpInfo("scatter_add", cases(
        ("duplicates", shaped(3, 4), 1, I([[0, 0, 3], [2, 2, 2]]), shaped(2, 3)),
        ("dim0", shaped(3, 4), 0, I([[0, 1, 2, 0], [0, 0, 0, 0]]), shaped(2, 4)),
        ("0d", shaped(), 0, I(0), shaped()),
    ), method=True),
    OpInfo("scatter_reduce", cases(
        ("sum", shaped(3, 4), 1, I([[0, 0, 3], [2, 2, 2]]), shaped(2, 3), "sum"),
        ("sum_exclude", shaped(3, 4), 1, I([[0, 0, 3]]), shaped(1, 3), "sum", {"include_self": False}),
        ("prod", shaped(3, 4), 1, I([[0, 0, 3], [1, 1, 1]]), shaped(2, 3), "prod"),
        ("prod_exclude", shaped(3, 4), 0, I([[0, 1, 0, 2], [0, 1, 1, 2]]), shaped(2, 4), "prod",
         {"include_self": False}),
        ("mean", shaped(3, 4), 1, I([[0, 0, 3], [2, 2, 2]]), shaped(2, 3), "mean"),
        ("mean_exclude", shaped(3, 4), 1, I([[0, 0, 3]]), shaped(1, 3), "mean", {"include_self": False}),
        ("amax", lambda rng: distinct(rng, 3, 4), 1, I([[0, 0, 3], [2, 2, 2]]), lambda rng: distinct(rng, 2, 3) + 0.1,
         "amax"),
        ("amin_exclude", lambda rng: distinct(rng, 3, 4), 0, I([[0, 1, 0, 2], [0, 1, 1, 2]]),
         lambda rng: distinct(rng, 2, 4) + 0.1, "amin", {"include_self": False}),
    ), method=True),
    OpInfo("scatter_reduce", lambda rng: [
        Sample((rand(rng, 2, 3), 1, C(np.array([[0, 0, 1], [2, 2, 2]])), np.array([[1.0, 1.0, 0.5], [0.0, 2.0, 0.0]]),
                "amax"), name="ties", gradcheck=False),
        Sample((rand(rng, 2, 3), 1, C(np.array([[0, 0, 1], [1, 1, 2]])), np.array([[0.0, 1.5, 0.5], [0.0, 2.0, 0.7]]),
                "prod"), name="lone_zeros"),
    ], aliases=("scatter_reduce_at_kinks",)),
    OpInfo("index_reduce", cases(
        ("prod", shaped(3, 4), 0, I([0, 2, 0]), shaped(3, 4), "prod"),
        ("prod_exclude", shaped(3, 4), 1, I([3, 1]), shaped(3, 2), "prod", {"include_self": False}),
        ("mean", shaped(3, 4), 1, I([0, 0, 3]), shaped(3, 3), "mean"),
        ("mean_exclude", shaped(3, 4), 0, I([2, 2]), shaped(2, 4), "mean", {"include_self": False}),
        ("amax", lambda rng: distinct(rng, 3, 4), 1, I([0, 0, 3]), lambda rng: distinct(rng, 3, 3) + 0.1, "amax"),
        ("amin_exclude", lambda rng: distinct(rng, 3, 4), 0, I([1, 0, 1]), lambda rng: distinct(rng, 3, 4) + 0.1,
         "amin", {"include_self": False}),
        ("1d", shaped(4), 0, I([1, 1, 3]), shaped(3), "prod"),
    ), method=True),
    OpInfo("index_reduce", lambda rng: [
        Sample((rand(rng, 2, 3), 0, C(np.array([0, 0])), np.array([[1.0, 1.0, 0.5], [0.0, 2.0, 0.5]]), "amax"),
               name="ties", gradcheck=False),
        Sample((rand(rng, 2, 3), 0, C(np.array([1, 1])), np.array([[0.0, 1.5, 0.0], [0.7, 2.0, 0.3]]), "prod"),
               name="lone_zeros"),
    ], aliases=("index_reduce_at_kinks",)),

    # ---- masks, flat positions ------------------------------------------------------------
    OpInfo("masked_fill", cases(
        ("scalar", shaped(3, 4), B([[True, False, True, False]] * 3), 0.5),
        ("broadcast_mask", shaped(3, 4), B([False, True, True, False]), -1.0),
        ("broadcast_self", shaped(4), C(np.eye(3, 4, dtype=bool)), 2.0),
        ("tensor_value", shaped(3, 4), B([True, False, False, True]), shaped()),
        ("0d", shaped(), B(True), 1.0),
    ), method=True),
    OpInfo("masked_select", cases(
        ("same", shaped(3, 4), C(np.eye(3, 4, dtype=bool))),
        ("broadcast_mask", shaped(3, 4), B([True, False, True, True])),
        ("broadcast_both", shaped(3, 1), B([[False, True]])), ("none", shaped(2, 2), C(np.zeros((2, 2), dtype=bool))),
    ), method=True),
    OpInfo("masked_scatter", cases(
        ("same", shaped(3, 4), C(np.eye(3, 4, dtype=bool)), shaped(5)),
        ("broadcast_mask", shaped(3, 4), B([True, False, False, True]), shaped(2, 4)),
        ("broadcast_self", shaped(4), C(np.eye(2, 4, dtype=bool)), shaped(3)),
    ), method=True),
    OpInfo("take", cases(
        ("duplicates", shaped(3, 4), I([0, 11, 0, 5])), ("negative", shaped(3, 4), I([-1, -12])),
        ("2d_index", shaped(2, 3), I([[0, 1], [5, 5]])), ("0d", shaped(), I(0)),
        ("noncontig", lambda rng: noncontig(rand(rng, 4, 3)), I([1, 2, 7])),
    ), method=True),
    OpInfo("take_along_dim", cases(
        ("dim", shaped(3, 4), I([[0, 3], [1, 1], [2, 0]]), 1), ("flat", shaped(3, 4), I([0, 7, 7])),
        ("broadcast", shaped(3, 4), I([[1, 2, 0, 0]]), 0),
    ), method=True),
    OpInfo("put", cases(
        ("accumulate_duplicates", shaped(3, 4), I([0, 0, 11]), shaped(3), True),
        ("replace", shaped(3, 4), I([[1, 5], [-1, 2]]), shaped(2, 2)),
        ("0d", shaped(), I([0]), shaped(1)),
    ), method=True),
    OpInfo("nonzero", cases(("2d", lambda rng: np.array([[0.0, 1.5], [2.0, 0.0]])), ("0d", lambda rng: np.array(3.0)),
                            ("empty", lambda rng: np.zeros((0, 2)))), differentiable=False),
    OpInfo("nonzero", cases(("as_tuple", lambda rng: np.array([[0.0, 1.5], [2.0, 0.0]]), {"as_tuple": True})),
           differentiable=False, aliases=("nonzero_as_tuple",)),
    OpInfo("argwhere", cases(("2d", lambda rng: np.array([[0.0, 1.5], [2.0, -1.0]]))), differentiable=False),
    OpInfo("nonzero_static", cases(
        ("padded", lambda rng: np.array([[0.0, 1.5], [2.0, 0.0]]), {"size": 3}),
        ("cut", lambda rng: np.array([[0.0, 1.5], [2.0, 0.0]]), {"size": 1, "fill_value": 7}),
        ("0d", lambda rng: np.array(3.0), {"size": 2})), differentiable=False, method=True),
]

OPS += [
    OpInfo("fill", lambda rng: [Sample((rand(rng, 2, 3), 1.5), name="number"),
                                Sample((rand(rng, 2, 3), rand(rng)), name="tensor")], aliases=("fill_",)),
    OpInfo("zero_", lambda rng: [Sample((rand(rng, 2, 3),), name="plain")], call=lambda m, x: m.zero_(x.clone())),
]
