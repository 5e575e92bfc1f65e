"""Op database rows: shape and view ops (OPS.md F).

Samples cover 0-d inputs, size-0 and size-1 dims, negative dims and non-contiguous inputs (which
decide between a view and a copy in reshape/ravel). Functions torch has only as Tensor methods
(view, expand, repeat, unfold, ...) are called through `call=`.
"""

from __future__ import annotations

import numpy as np

from . import C, Dt, OpInfo, Sample, noncontig, rand


def method(name: str):
    """call= for a Tensor method: x.<name>(*args, **kwargs)."""
    return lambda m, x, *args, **kwargs: getattr(x, name)(*args, **kwargs)


def arg(value: tuple) -> tuple:
    """A tuple passed as a parameter (plain tuples of ints in `samples` are shapes)."""
    return _Literal(value)


class _Literal(tuple):
    pass


def samples(*cases):
    """A samples function from (name, arguments..., [kwargs]) tuples. A tuple of ints is the shape
    of a random input, ("nc", shape) a non-contiguous one, a list of shapes a list of inputs;
    `arg(...)` tuples and everything else are passed as they are."""
    def build(rng, a):
        if isinstance(a, _Literal):
            return tuple(a)
        if isinstance(a, tuple) and len(a) == 2 and a[0] == "nc":
            return noncontig(rand(rng, *a[1]))
        if isinstance(a, tuple) and all(isinstance(n, int) for n in a):
            return rand(rng, *a)
        if isinstance(a, list) and a and all(isinstance(n, tuple) for n in a):
            return [rand(rng, *n) for n in a]
        return a

    def make(rng):
        out = []
        for name, *args in cases:
            kwargs = args.pop() if args and isinstance(args[-1], dict) else {}
            out.append(Sample(tuple(build(rng, a) for a in args), kwargs, name))
        return out
    return make


def rows(name: str, *cases, no_fd: tuple[str, ...] = (), **info) -> OpInfo:
    """An OpInfo with `samples(*cases)`; the samples named in `no_fd` skip the finite-difference checks."""
    make = samples(*cases)

    def marked(rng):
        out = make(rng)
        for s in out:
            s.gradcheck = s.name not in no_fd
        return out
    return OpInfo(name, marked, **info)


OPS = [
    # ---- views of the same elements -------------------------------------------------------
    rows("view", ("2d", (3, 4), arg((2, 6))), ("infer", (3, 4), arg((-1,))), ("0d_to_1", (), arg((1,))),
         ("to_0d", (1, 1), arg(())), ("size0", (0, 3), arg((3, 0))), ("size1", (1, 5), arg((5, 1))),
         call=lambda m, x, shape: x.view(shape)),
    rows("reshape", ("view", (3, 4), arg((2, -1))), ("copy_noncontig", ("nc", (4, 3)), arg((12,))),
         ("0d", (), arg((1, 1))), ("size0", (2, 0), arg((0, 5))), ("noncontig_viewable", ("nc", (4, 1)), arg((4,)))),
    OpInfo("view_as", samples(("2d", (3, 4), (6, 2))), call=lambda m, x, y: x.view_as(y.detach()),
           aliases=("view_as",)),
    OpInfo("reshape_as", samples(("noncontig", ("nc", (3, 4)), (6, 2))), call=lambda m, x, y: x.reshape_as(y.detach()),
           aliases=("reshape_as",)),
    rows("ravel", ("contig", (3, 4)), ("noncontig", ("nc", (3, 4))), ("0d", ())),
    rows("flatten", ("all", (2, 3, 4)), ("range", (2, 3, 4), 1, -1), ("neg", (2, 3, 4), -3, -2), ("0d", ()),
         ("1d_self", (5,)), ("noncontig", ("nc", (2, 3, 4)), 0, 1), ("size0", (2, 0, 3), 1), method=True),
    rows("unflatten", ("infer", (3, 8), -1, arg((2, -1))), ("first", (6, 2), 0, arg((3, 2))),
         ("size1", (3, 4), 1, arg((4, 1)))),
    rows("transpose", ("2d", (3, 4), 0, 1), ("neg", (2, 3, 4), -1, -3), ("same", (2, 3), 1, 1), ("0d", (), 0, -1),
         ("size0", (0, 3), 0, 1), method=True),
    rows("swapaxes", ("3d", (2, 3, 4), 0, 2)),
    rows("swapdims", ("3d", (2, 3, 4), -1, 0)),
    rows("t", ("2d", (3, 4)), ("1d", (4,)), ("0d", ()), ("noncontig", ("nc", (3, 4))), method=True),
    OpInfo("T", samples(("2d", (3, 4)), ("1d", (4,))), call=lambda m, x: x.T, aliases=("T",)),
    OpInfo("mT", samples(("3d", (2, 3, 4))), call=lambda m, x: x.mT, aliases=("mT",)),
    rows("permute", ("3d", (2, 3, 4), arg((2, 0, 1))), ("neg", (2, 3, 4), arg((-1, 0, -2))), ("0d", (), arg(())),
         ("size0", (2, 0, 3), arg((1, 2, 0)))),
    OpInfo("permute", samples(("varargs", (2, 3, 4), 1, 2, 0)), call=method("permute"), aliases=("permute_method",)),
    rows("movedim", ("int", (2, 3, 4), 0, -1), ("seq", (2, 3, 4, 5), arg((0, 1)), arg((3, 0)))),
    rows("moveaxis", ("int", (2, 3, 4), -1, 0)),
    rows("squeeze", ("all", (1, 3, 1, 2)), ("dim", (1, 3, 1), 2), ("dim_not1", (2, 3), 0), ("neg", (3, 1), -1),
         ("dims", (1, 3, 1, 2), arg((0, -2, 1))), ("0d", ()), ("0d_dim", (), 0), method=True),
    rows("unsqueeze", ("front", (3, 4), 0), ("back", (3, 4), -1), ("mid", (3, 4), 1), ("0d", (), 0),
         ("size0", (0,), 1), method=True),
    rows("expand", ("size1", (3, 1), arg((3, 4))), ("adds_dims", (4,), arg((2, 3, 4))), ("keep", (3, 1), arg((-1, 5))),
         ("0d", (), arg((2, 3))), ("size0", (1, 3), arg((0, 3))), ("noncontig", ("nc", (1, 3)), arg((2, 1, 3))),
         call=lambda m, x, shape: x.expand(shape)),
    OpInfo("expand_as", samples(("bcast", (3, 1), (2, 3, 4))), call=lambda m, x, y: x.expand_as(y.detach())),
    rows("broadcast_to", ("bcast", (3, 1), arg((2, 3, 4))), ("0d", (), arg((3,)))),
    rows("contiguous", ("contig", (3, 4)), ("noncontig", ("nc", (3, 4))), call=method("contiguous")),
    rows("clone", ("2d", (3, 4)), ("0d", ()), ("noncontig", ("nc", (3, 4))), method=True),
    rows("detach", ("2d", (3, 4)), differentiable=False),
    # the casts to float32 are linear, so a coarse finite-difference step is exact up to rounding
    rows("to", ("same", (3, 4), Dt("float64")), ("float32", (3, 4), Dt("float32")), ("int", (3, 4), Dt("int64")),
         ("0d", (), Dt("float32")), call=lambda m, x, dt: x.to(dt), fd_eps=1e-3),
    OpInfo("type_as", samples(("float32", (3, 4), C(np.zeros(2, dtype=np.float32)))),
           call=lambda m, x, y: x.type_as(y), fd_eps=1e-3),

    # ---- joining and splitting ------------------------------------------------------------
    rows("cat", ("dim0", [(2, 3), (1, 3), (0, 3)]), ("neg", [(2, 3), (2, 1)], -1), ("skip_1d_empty", [(2, 3), (0,)]),
         ("size1", [(1,), (1,)])),
    rows("concat", ("dim1", [(2, 3), (2, 2)], 1)),
    rows("concatenate", ("axis", [(2, 3), (1, 3)], 0)),
    rows("stack", ("dim0", [(2, 3), (2, 3)]), ("neg", [(2, 3), (2, 3), (2, 3)], -1), ("0d", [(), ()]),
         ("size0", [(0, 2), (0, 2)], 1)),
    rows("hstack", ("2d", [(2, 3), (2, 1)]), ("1d", [(3,), (2,)]), ("0d", [(), ()])),
    rows("vstack", ("1d", [(3,), (3,)]), ("2d", [(2, 3), (1, 3)]), ("0d", [(), ()])),
    rows("row_stack", ("mixed", [(3,), (2, 3)])),
    rows("dstack", ("2d", [(2, 3), (2, 3)]), ("1d", [(3,), (3,)]), ("3d", [(2, 3, 1), (2, 3, 2)])),
    rows("column_stack", ("1d", [(3,), (3,)]), ("mixed", [(3, 2), (3,)]), ("0d", [(), ()])),
    rows("atleast_1d", ("0d", ()), ("2d_self", (2, 3))),
    rows("atleast_2d", ("0d", ()), ("1d", (3,)), ("3d_self", (2, 1, 3))),
    rows("atleast_3d", ("0d", ()), ("1d", (3,)), ("2d", (2, 3)), ("4d", (1, 2, 1, 2))),
    OpInfo("atleast_2d", samples(("several", (), (3,), (2, 3))), call=lambda m, *xs: m.atleast_2d(*xs),
           aliases=("atleast_nd_several",)),
    OpInfo("atleast_3d", samples(("list", [(), (3,)])), aliases=("atleast_nd_list",)),
    rows("split", ("int", (5, 3), 2), ("sizes", (5, 3), [1, 4]), ("neg_dim", (3, 5), 2, -1), ("exact", (4, 2), 2),
         ("size0", (0, 3), 2), method=True),
    rows("split_with_sizes", ("sizes", (5, 3), [2, 0, 3]), ("dim1", (3, 4), [1, 3], 1)),
    rows("chunk", ("uneven", (5, 3), 2), ("more_than_size", (2, 3), 4), ("neg_dim", (3, 6), 3, -1), method=True),
    rows("unsafe_split", ("int", (5, 3), 2), ("neg_dim", (3, 5), 2, -1), method=True),
    rows("unsafe_split_with_sizes", ("sizes", (5, 3), [2, 0, 3]), ("dim1", (3, 4), [1, 3], 1), method=True),
    rows("unsafe_chunk", ("uneven", (5, 3), 2), ("neg_dim", (3, 6), 3, -1), method=True),
    rows("tensor_split", ("sections", (7, 2), 3), ("indices", (7, 2), [1, 5]), ("unsorted", (6,), [4, 2]),
         ("dim1", (2, 5), [-1], 1), ("tensor", (7,), C(np.array(2))), ("tensor_indices", (7,), C(np.array([3])))),
    rows("unbind", ("dim0", (3, 4)), ("neg", (2, 3, 4), -1), ("size1", (1, 4), 0), method=True),
    rows("narrow", ("mid", (4, 5), 1, 1, 3), ("neg_start", (4, 5), 0, -2, 2), ("empty", (4, 5), 1, 5, 0),
         method=True),
    rows("select", ("dim0", (3, 4), 0, 1), ("neg", (3, 4), -1, -1), ("3d", (2, 3, 4), 1, 2), method=True),

    # ---- copies that rearrange ------------------------------------------------------------
    rows("repeat", ("2d", (2, 3), arg((2, 1))), ("lead", (2, 3), arg((2, 1, 3))), ("0d", (), arg((3,))),
         ("zero", (2, 3), arg((0, 2))), ("noncontig", ("nc", (2, 3)), arg((1, 2))),
         call=lambda m, x, reps: x.repeat(*reps), aliases=("repeat",)),
    rows("repeat_interleave", ("flat", (2, 3), 2), ("dim", (2, 3), 3, 1), ("neg_dim", (2, 3), 1, -2),
         ("tensor", (3, 2), C(np.array([1, 0, 2])), 0), ("tensor1", (3, 2), C(np.array([2])), 1)),
    rows("tile", ("short", (2, 3), arg((2,))), ("long", (2, 3), arg((2, 1, 2))), ("0d", (), arg((2, 2)))),
    rows("flip", ("one", (3, 4), arg((0,))), ("two", (2, 3, 4), arg((-1, 0))), ("0d", (), arg(())),
         ("size0", (0, 3), arg((1,))), method=True),
    OpInfo("flip", samples(("varargs", (2, 3), 0, 1)), call=method("flip"), aliases=("flip_method",)),
    rows("fliplr", ("2d", (3, 4))),
    rows("flipud", ("1d", (4,)), ("3d", (2, 3, 2))),
    rows("roll", ("flat", (3, 4), 5), ("dim", (3, 4), -1, 1), ("dims", (3, 4), arg((1, 2)), arg((0, -1))),
         ("0d", (), 1), ("size0", (0, 3), 1, 0), method=True),
    rows("rot90", ("once", (3, 4)), ("twice", (3, 4), 2), ("back", (3, 4), -1), ("dims", (2, 3, 4), 3, arg((2, 0))),
         ("zero", (3, 4), 0), method=True),

    # ---- diagonals and triangles ----------------------------------------------------------
    rows("diagonal", ("square", (3, 3)), ("offset", (3, 4), 1), ("neg_offset", (4, 3), -2),
         ("dims", (2, 3, 4), 0, -1, 0), ("beyond", (3, 3), 5), method=True),
    rows("diag", ("vector", (3,)), ("vector_offset", (3,), -1), ("matrix", (3, 4)), ("matrix_offset", (4, 3), 1),
         method=True),
    rows("diag_embed", ("2d", (2, 3)), ("offset", (3,), 1), ("dims", (2, 3), -1, 0, 2), ("neg_offset", (2, 2), -1)),
    rows("tril", ("square", (3, 3)), ("offset", (3, 4), 1), ("batched", (2, 3, 4), -1), method=True),
    rows("triu", ("square", (3, 3)), ("offset", (4, 3), -1), ("batched", (2, 3, 3), 1), method=True),

    # ---- strided views --------------------------------------------------------------------
    rows("as_strided", ("window", (3, 4), arg((2, 2)), arg((4, 1))), ("offset", (3, 4), arg((2, 3)), arg((1, 2)), 1),
         ("overlap", (6,), arg((3, 3)), arg((1, 1))), ("noncontig", ("nc", (3, 4)), arg((2, 2)), arg((1, 3))),
         ("0d_out", (3,), arg(()), arg(()), 2), method=True,
         # as_strided reads storage: finite differences through a contiguous copy of a non-contiguous
         # input read other elements, so that sample is compared with torch only
         no_fd=("noncontig",)),
    rows("unfold", ("windows", (3, 6), 1, 2, 2), ("overlap", (5,), 0, 3, 1), ("neg_dim", (2, 5), -1, 2, 3),
         ("empty", (3, 4), 1, 0, 1), ("0d", (), 0, 1, 1), call=method("unfold"), aliases=("Tensor.unfold",)),

    # ---- copies of views and their adjoints, the scatters (Note [view copies and scatters]) ---
    rows("alias_copy", ("2d", (3, 4)), ("0d", ())),
    rows("as_strided_copy", ("window", (3, 4), arg((2, 2)), arg((4, 1))),
         ("offset", (3, 4), arg((2, 3)), arg((1, 2)), 1)),
    rows("diagonal_copy", ("offset", (3, 4), 1), ("dims", (2, 3, 4), 0, -1, 0)),
    rows("expand_copy", ("size1", (3, 1), arg((3, 4))), ("adds_dims", (4,), arg((2, 3, 4)))),
    rows("narrow_copy", ("mid", (4, 5), 1, 1, 3), ("size1", (1, 5), 0, 0, 1), method=True),
    rows("permute_copy", ("3d", (2, 3, 4), arg((2, 0, 1))), ("0d", (), arg(()))),
    rows("squeeze_copy", ("all", (1, 3, 1, 2)), ("dim", (1, 3, 1), 2), ("dims", (1, 3, 1, 2), arg((0, -2, 1)))),
    rows("t_copy", ("2d", (3, 4)), ("1d", (4,))),
    rows("transpose_copy", ("neg", (2, 3, 4), -1, -3), ("noncontig", ("nc", (3, 4)), 0, 1)),
    rows("unbind_copy", ("dim0", (3, 4)), ("neg", (2, 3, 4), -1)),
    rows("unfold_copy", ("windows", (3, 6), 1, 2, 2), ("overlap", (5,), 0, 3, 1)),
    rows("unsqueeze_copy", ("mid", (3, 4), 1), ("0d", (), 0)),
    rows("view_copy", ("2d", (3, 4), arg((2, 6))), ("noncontig", ("nc", (4, 3)), arg((12,))),
         ("infer", (3, 4), arg((-1,)))),
    rows("split_with_sizes_copy", ("sizes", (5, 3), [2, 0, 3]), ("dim1", (3, 4), [1, 3], 1)),
    rows("split_copy", ("even", (6, 3), 2), ("ragged_dim1", (3, 5), 2, 1)),
    rows("select_copy", ("dim0", (3, 4), 0, 1), ("neg", (2, 3, 4), -1, -2)),
    rows("slice_copy", ("mid", (4, 5), 1, 1, 3), ("step", (6, 3), 0, 1, None, 3), ("default", (3, 2)),
         ("clamped", (4, 3), 0, -2, 10)),
    rows("select_scatter", ("dim0", (3, 4), (4,), 0, 1), ("neg", (2, 3, 4), (2, 3), -1, -1), method=True),
    rows("slice_scatter", ("mid", (4, 5), (4, 2), 1, 1, 3), ("step", (6, 3), (2, 3), 0, 1, None, 3),
         ("default", (3, 2), (3, 2)), ("clamped", (4, 3), (2, 3), 0, -2, 10), method=True),
    rows("diagonal_scatter", ("square", (3, 3), (3,)), ("offset", (3, 4), (3,), 1),
         ("dims", (2, 3, 4), (3, 2), 0, 0, -1), method=True),
]

OPS += [
    OpInfo("hsplit", lambda rng: [Sample((rand(rng, 2, 6), 3), name="sections"),
                                  Sample((rand(rng, 6), [1, 4]), name="vector")], method=True),
    OpInfo("vsplit", lambda rng: [Sample((rand(rng, 4, 2), [1]), name="indices")], method=True),
    OpInfo("dsplit", lambda rng: [Sample((rand(rng, 2, 2, 4), 2), name="sections")], method=True),
    OpInfo("broadcast_tensors", lambda rng: [Sample((rand(rng, 2, 3), rand(rng, 3)), name="expand")]),
    OpInfo("meshgrid", lambda rng: [Sample((rand(rng, 3), rand(rng, 2)), {"indexing": "ij"}, name="ij"),
                                    Sample((rand(rng, 3), rand(rng), rand(rng, 2)), {"indexing": "xy"}, name="xy")]),
    OpInfo("cartesian_prod", lambda rng: [Sample((rand(rng, 3), rand(rng, 2)), name="two")]),
    OpInfo("combinations", lambda rng: [Sample((rand(rng, 4),), name="pairs"),
                                        Sample((rand(rng, 3), 3, True), name="with_replacement"),
                                        Sample((rand(rng, 3), 1), name="one"), Sample((rand(rng, 2), 3), name="none")]),
    OpInfo("block_diag", lambda rng: [Sample((rand(rng, 2, 3), rand(rng, 1, 1), rand(rng, 2)), name="mixed"),
                                      Sample((rand(rng), rand(rng, 0, 2)), name="0d_empty")]),
    OpInfo("broadcast_shapes", lambda rng: [Sample(((2, 1), (3, 1, 4)), name="shapes"),
                                            Sample((5, (3, 1), ()), name="ints")], differentiable=False),
    OpInfo("unravel_index", lambda rng: [Sample((C(np.array([[0, 5], [-1, 11]])), (3, 4)), name="2d"),
                                         Sample((C(np.array(7)), 9), name="int_shape")], differentiable=False),
    OpInfo("diagflat", lambda rng: [Sample((rand(rng, 2, 2),), name="matrix"), Sample((rand(rng, 3), -1), name="off")],
           method=True),
    OpInfo("positive", lambda rng: [Sample((rand(rng, 2, 3),), name="plain")], method=True),
    OpInfo("resolve_neg", lambda rng: [Sample((rand(rng, 2, 3),), name="plain")], method=True),
    OpInfo("sum_to_size", lambda rng: [Sample((rand(rng, 2, 3, 4), 3, 1), name="dims")], call=method("sum_to_size")),
]
