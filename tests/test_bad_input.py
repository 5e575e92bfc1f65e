"""Misuse table: each case runs in torch and retrograd; both must raise the same exception type and message,
and the failed call must leave every tensor and `.grad` it touched unchanged."""

import numpy as np
import pytest
import torch

import retrograd

LIBS = {"torch": torch, "retrograd": retrograd}


def _leaf(lib, values=(1.0, 2.0, 3.0), requires_grad=True):
    return lib.tensor(list(values), dtype=lib.float32, requires_grad=requires_grad)


def _freed(lib):
    x = _leaf(lib)
    y = (x.exp() * x).sum()
    y.backward()
    return {"x": x, "y": y}


def _modified_saved(lib):
    x = _leaf(lib)
    y = x.exp()
    y.add_(1)
    return {"x": x, "y": y}


def _unused(lib):
    a, b = _leaf(lib), _leaf(lib)
    return {"a": a, "b": b, "out": (a * 2).sum()}


def _norm_stats(lib):
    return {"mean": lib.tensor([0.5, -1.0, 2.0]), "var": lib.tensor([1.5, 2.0, 0.5])}


def _view_of_leaf(lib):
    x = _leaf(lib, (1.0, 2.0, 3.0, 4.0))
    return {"x": x, "v": x.view(2, 2)}


def _unbind_view(lib):
    x = _leaf(lib, (1.0, 2.0, 3.0, 4.0))
    y = x * 1
    return {"x": x, "y": y, "parts": y.unbind(0)}


def _pair(lib):
    return {"a": _leaf(lib), "b": lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)}


def _ints(lib):
    return {"i": lib.tensor([1, 2, 3]), "x": _leaf(lib)}


def _mixed_dtypes(lib):
    f, d = lib.float32, lib.float64
    return {"f3": lib.ones(2, 3, 3, dtype=f), "d3": lib.ones(2, 3, 3, dtype=d), "f2": lib.ones(3, 3, dtype=f),
            "d2": lib.ones(3, 3, dtype=d), "f1": lib.ones(3, dtype=f), "d1": lib.ones(3, dtype=d)}


def _grad_set(lib):
    x = _leaf(lib)
    (x * x).sum().backward()
    return {"x": x}


def _no_grad_views(lib):
    x = _leaf(lib)
    y = x * 1
    plain = lib.zeros(3)
    with lib.no_grad():
        env = {"x": x, "y": y, "plain": plain, "v": x[1:], "parts": y.unbind(), "plain_view": plain[:]}
    env["plain_parts"] = plain.split(1)
    env["flagged"] = lib.zeros(3)[1:].requires_grad_()
    return env

def _square(lib):
    return {"m": lib.tensor(np.arange(9.0).reshape(3, 3))}


def _lu(lib):
    a = lib.tensor([[1.0, 2.0, 0.5], [4.0, 1.0, 2.0], [0.5, 3.0, 1.0]])
    factors, pivots = lib.linalg.lu_factor(a)
    return {"a": a, "lu": factors, "piv": pivots, "singular": lib.tensor([[1.0, 2.0], [2.0, 4.0]])}


def _function_output_modified(lib):
    class Exp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad):
            (y,) = ctx.saved_tensors
            return grad * y

    x = _leaf(lib)
    y = Exp.apply(x)
    y.mul_(2)
    return {"x": x, "y": y}


# name -> (setup(lib) -> dict of tensors, action(lib, env))
CASES = {
    # ---- the error texts of OPS.md ----
    "backward_twice": (_freed, lambda lib, e: e["y"].backward()),
    "modified_by_inplace": (_modified_saved, lambda lib, e: e["y"].sum().backward()),
    "leaf_inplace": (lambda lib: {"x": _leaf(lib)}, lambda lib, e: e["x"].add_(1)),
    "leaf_inplace_mul": (lambda lib: {"x": _leaf(lib)}, lambda lib, e: e["x"].mul_(2)),
    "non_scalar_backward": (lambda lib: {"x": _leaf(lib)}, lambda lib, e: (e["x"] * 2).backward()),
    "no_grad_fn": (lambda lib: {"x": _leaf(lib, requires_grad=False)}, lambda lib, e: e["x"].sum().backward()),
    "unused_input": (_unused, lambda lib, e: lib.autograd.grad(e["out"], [e["a"], e["b"]])),
    "requires_grad_nonleaf": (lambda lib: {"x": _leaf(lib)}, lambda lib, e: (e["x"] * 2).requires_grad_(False)),
    "requires_grad_int": (_ints, lambda lib, e: e["i"].requires_grad_()),
    "requires_grad_int_ctor": (lambda lib: {}, lambda lib, e: lib.tensor([1, 2], requires_grad=True)),
    "requires_grad_bool_ctor": (lambda lib: {}, lambda lib, e: lib.tensor([True], requires_grad=True)),
    "index_select_row_out_of_range": (_pair, lambda lib, e: e["b"].index_select(0, lib.tensor([0, 5]))),
    "index_select_column_out_of_range": (_pair, lambda lib, e: e["b"].index_select(1, lib.tensor([-1]))),
    "index_select_vector_out_of_range": (lambda lib: {"x": _leaf(lib)},
                                         lambda lib, e: e["x"].index_select(0, lib.tensor([3]))),
    "index_select_empty_rows": (lambda lib: {}, lambda lib, e: lib.zeros(0, 2).index_select(0, lib.tensor([0]))),
    "index_select_empty_vector": (lambda lib: {}, lambda lib, e: lib.zeros(0).index_select(0, lib.tensor([0]))),
    "hook_no_grad": (lambda lib: {"x": _leaf(lib, requires_grad=False)},
                     lambda lib, e: e["x"].register_hook(lambda g: g)),
    "retain_grad_no_grad": (lambda lib: {"x": _leaf(lib, requires_grad=False)}, lambda lib, e: e["x"].retain_grad()),
    "unbind_view_inplace": (_unbind_view, lambda lib, e: e["parts"][0].mul_(2)),
    "view_of_leaf_inplace": (_view_of_leaf, lambda lib, e: e["v"].add_(1)),
    # ---- shapes, dims, dtypes, argument types ----
    "view_as_complex_of_complex": (lambda lib: {},
                                   lambda lib, e: lib.view_as_complex(lib.zeros(2, 2, dtype=lib.complex64))),
    "complex_of_complex_part": (lambda lib: {}, lambda lib, e: lib.complex(lib.zeros(2, dtype=lib.complex64),
                                                                        lib.zeros(2))),
    "inplace_result_type_short": (lambda lib: {"s": lib.zeros(2, dtype=lib.int16)},
                                  lambda lib, e: e["s"].add_(lib.zeros(2, dtype=lib.float64))),
    "add_shape_mismatch": (_pair, lambda lib, e: e["a"] + e["b"]),
    "matmul_shape_mismatch": (_pair, lambda lib, e: e["b"] @ lib.ones(3, 3)),
    "mm_1d": (_pair, lambda lib, e: lib.mm(e["a"], e["b"])),
    "sum_dim_out_of_range": (_pair, lambda lib, e: e["b"].sum(dim=2)),
    "softmax_dim_out_of_range": (_pair, lambda lib, e: e["b"].softmax(dim=-3)),
    "view_bad_size": (_pair, lambda lib, e: e["b"].view(3)),
    "reshape_bad_size": (_pair, lambda lib, e: e["b"].reshape(5, -1)),
    "cat_dim_mismatch": (_pair, lambda lib, e: lib.cat([e["a"], e["b"]])),
    "index_out_of_range": (_pair, lambda lib, e: e["a"][5]),
    "add_str": (_pair, lambda lib, e: e["a"] + "x"),
    "radd_str": (_pair, lambda lib, e: "x" + e["a"]),
    "mul_str": (_pair, lambda lib, e: e["a"] * "x"),
    "sub_none": (_pair, lambda lib, e: e["a"] - None),
    "div_list": (_pair, lambda lib, e: e["a"] / [1.0, 2.0, 3.0]),
    "pow_str": (_pair, lambda lib, e: e["a"] ** "x"),
    "matmul_str": (_pair, lambda lib, e: e["b"] @ "x"),
    "lt_str": (_pair, lambda lib, e: e["a"] < "x"),
    "add_object": (_pair, lambda lib, e: e["a"] + object()),
    "to_cuda": (_pair, lambda lib, e: e["a"].to("cuda")),
    "exp_list": (lambda lib: {}, lambda lib, e: lib.exp([1.0])),
    "exp_str": (lambda lib: {}, lambda lib, e: lib.exp("x")),
    "tanh_none": (lambda lib: {}, lambda lib, e: lib.tanh(None)),
    "add_fn_str": (_pair, lambda lib, e: lib.add(e["a"], "x")),
    "add_fn_list_first": (_pair, lambda lib, e: lib.add([1.0], e["a"])),
    "mul_fn_list": (_pair, lambda lib, e: lib.mul(e["a"], [1.0, 2.0, 3.0])),
    "relu_list": (lambda lib: {}, lambda lib, e: lib.nn.functional.relu([1.0])),
    "grad_wrong_shape": (_pair, lambda lib, e: (e["a"] * 2).backward(lib.ones(4))),
    "assign_grad_wrong_shape": (_pair, lambda lib, e: setattr(e["a"], "grad", lib.ones(4))),
    "assign_grad_wrong_dtype": (_pair, lambda lib, e: setattr(e["a"], "grad", lib.ones(3, dtype=lib.float64))),
    "assign_grad_int_dtype": (_pair, lambda lib, e: setattr(e["b"], "grad", lib.ones(2, 2, dtype=lib.int64))),
    "assign_grad_to_int": (_ints, lambda lib, e: setattr(e["i"], "grad", lib.ones(3))),
    "assign_grad_complex": (_pair, lambda lib, e: setattr(e["a"], "grad", lib.ones(3, dtype=lib.complex128))),
    "assign_grad_itself": (_pair, lambda lib, e: setattr(e["a"], "grad", e["a"])),
    "assign_grad_list": (_pair, lambda lib, e: setattr(e["a"], "grad", [1.0, 2.0, 3.0])),
    # ---- the LU family ----
    "lu_factor_1d": (_lu, lambda lib, e: lib.linalg.lu_factor(e["a"][0])),
    "lu_1d": (_lu, lambda lib, e: lib.linalg.lu(e["a"][0])),
    "lu_int": (_lu, lambda lib, e: lib.linalg.lu(e["a"].long())),
    "lu_factor_half": (_lu, lambda lib, e: lib.linalg.lu_factor_ex(e["a"].half())),
    "lu_without_pivoting": (_lu, lambda lib, e: lib.linalg.lu(e["a"], pivot=False)),
    "lu_factor_singular": (_lu, lambda lib, e: lib.linalg.lu_factor(e["singular"])),
    "lu_factor_ex_singular_batch": (_lu, lambda lib, e: lib.linalg.lu_factor_ex(
        lib.stack([e["singular"] + 1, e["singular"]]), check_errors=True)),
    "lu_solve_vector": (_lu, lambda lib, e: lib.linalg.lu_solve(e["lu"], e["piv"], e["a"][0])),
    "lu_solve_shapes": (_lu, lambda lib, e: lib.linalg.lu_solve(e["lu"], e["piv"], e["a"][:2])),
    "lu_solve_right_shapes": (_lu, lambda lib, e: lib.linalg.lu_solve(e["lu"], e["piv"], e["a"][:, :2], left=False)),
    "lu_solve_dtypes": (_lu, lambda lib, e: lib.linalg.lu_solve(e["lu"], e["piv"], e["a"].double())),
    "lu_solve_int": (_lu, lambda lib, e: lib.linalg.lu_solve(e["lu"].long(), e["piv"], e["a"].long())),
    "lu_solve_long_pivots": (_lu, lambda lib, e: lib.linalg.lu_solve(e["lu"], e["piv"].long(), e["a"])),
    "lu_solve_short_pivots": (_lu, lambda lib, e: lib.linalg.lu_solve(e["lu"], e["piv"][:2], e["a"])),
    "lu_solve_batched_pivots": (_lu, lambda lib, e: lib.linalg.lu_solve(e["lu"], e["piv"].expand(2, 3), e["a"])),
    "lu_solve_not_square": (_lu, lambda lib, e: lib.linalg.lu_solve(e["lu"][:, :2], e["piv"][:2], e["a"])),
    "lu_solve_batches": (_lu, lambda lib, e: lib.linalg.lu_solve(e["lu"].expand(4, 3, 3), e["piv"].expand(4, 3),
                                                                 e["a"].expand(2, 3, 3))),
    "lu_unpack_1d": (_lu, lambda lib, e: lib.lu_unpack(e["a"][0], e["piv"])),
    "lu_unpack_long_pivots": (_lu, lambda lib, e: lib.lu_unpack(e["lu"], e["piv"].long())),
    "lu_unpack_pivot_range": (_lu, lambda lib, e: lib.lu_unpack(e["lu"], e["piv"] * 0)),
    # ---- views made in no_grad, written in place with grad mode enabled ----
    "no_grad_view_of_leaf_inplace": (_no_grad_views, lambda lib, e: e["v"].mul_(2)),
    "view_of_no_grad_view_inplace": (_no_grad_views, lambda lib, e: e["v"][0].mul_(2)),
    "no_grad_unbind_inplace": (_no_grad_views, lambda lib, e: e["parts"][0].add_(1)),
    "no_grad_view_other_requires_grad": (_no_grad_views, lambda lib, e: e["plain_view"].add_(e["x"])),
    "split_view_other_requires_grad": (_no_grad_views, lambda lib, e: e["plain_parts"][0].add_(e["x"][:1])),
    "requires_grad_view_inplace": (_no_grad_views, lambda lib, e: e["flagged"].mul_(2)),
    "backward_int_grad_shape": (_grad_set, lambda lib, e: (e["x"] * 2).sum().backward(lib.ones(2))),
    "grad_of_output_and_input_without_grad": (_ints, lambda lib, e: lib.autograd.grad(e["i"].float().sum(), e["i"])),
    "grad_of_input_without_grad": (_ints, lambda lib, e: lib.autograd.grad((e["x"] * 2).sum(), e["i"])),
    "lstm_input_size": (lambda lib: {}, lambda lib, e: lib.nn.LSTM(3, 4)(lib.ones(2, 3, 5))),
    "gru_unbatched_input_size": (lambda lib: {}, lambda lib, e: lib.nn.GRU(3, 4, batch_first=True)(lib.ones(2, 5))),
    "rnn_input_dtype": (lambda lib: {}, lambda lib, e: lib.nn.RNN(3, 4)(lib.ones(2, 1, 3, dtype=lib.float64))),
    # ---- losses: cross_entropy takes probabilities when the shapes agree, class indices otherwise ----
    "cross_entropy_float_indices": (_pair, lambda lib, e: lib.nn.functional.cross_entropy(
        e["b"], lib.tensor([0.0, 1.0]))),
    "cross_entropy_long_probabilities": (_pair, lambda lib, e: lib.nn.functional.cross_entropy(
        e["b"], lib.tensor([[0, 1], [1, 0]]))),
    "cross_entropy_probabilities_ignore_index": (_pair, lambda lib, e: lib.nn.functional.cross_entropy(
        e["b"], lib.tensor([[0.0, 1.0], [1.0, 0.0]]), ignore_index=1)),
    # ---- nll_loss's shape checks, in torch's order: an (N, 1) target (DataLoader's labels not squeezed) is refused
    **{f"nll_loss_{name}": (lambda lib: {}, lambda lib, e, shapes=shapes: lib.nn.functional.nll_loss(
        lib.zeros(shapes[0]), lib.zeros(shapes[1], dtype=shapes[2](lib)))) for name, shapes in {
        "column_target": ((3, 4), (3, 1), lambda lib: lib.long),
        "column_float_target": ((3, 4), (3, 1), lambda lib: lib.float32),
        "matrix_target_of_a_vector": ((4,), (2, 2), lambda lib: lib.long),
        "two_targets_of_a_vector": ((4,), (2,), lambda lib: lib.long),
        "two_float_targets_of_a_vector": ((4,), (2,), lambda lib: lib.float32),
        "scalar_target_of_a_batch": ((3, 4), (), lambda lib: lib.long),
        "image_target_of_two_dims": ((3, 4, 5, 6), (3, 5), lambda lib: lib.long),
        "image_float_target_of_other_size": ((3, 4, 5, 6), (3, 5, 7), lambda lib: lib.float32),
        "image_target_of_other_size": ((3, 4, 5, 6), (3, 5, 7), lambda lib: lib.long),
        "sequence_target_of_other_size": ((3, 4, 5), (3, 6), lambda lib: lib.float32),
        "volume_target_of_fewer_dims": ((3, 4, 5, 2, 2), (3, 5, 2), lambda lib: lib.long),
    }.items()},
    "cross_entropy_column_target": (lambda lib: {}, lambda lib, e: lib.nn.functional.cross_entropy(
        lib.zeros(3, 4), lib.zeros(3, 1, dtype=lib.long))),
    # ---- one_hot of an empty tensor: no value to infer the class count from (a MoE layer no token reaches) ----
    "one_hot_empty_infers_classes": (lambda lib: {}, lambda lib, e: lib.nn.functional.one_hot(
        lib.zeros(0, 2, dtype=lib.long))),
    "one_hot_empty_zero_classes": (lambda lib: {}, lambda lib, e: lib.nn.functional.one_hot(
        lib.zeros(0, dtype=lib.long), num_classes=0)),
    # ---- index_add_ / index_reduce_ take int32 or int64 indices (even empty ones), index_copy_ only int64 ----
    **{f"index_{name}": (lambda lib: {"m": lib.zeros(3, 3)}, action) for name, action in {
        "add_float_index": lambda lib, e: e["m"].index_add_(0, lib.tensor([0.0]), lib.ones(1, 3)),
        "add_empty_float_index": lambda lib, e: e["m"].index_add_(0, lib.tensor([]), lib.ones(0, 3)),
        "add_short_index_wrong_count": lambda lib, e: lib.index_add(e["m"], 0, lib.tensor([0], dtype=lib.int16),
                                                                    lib.ones(2, 3)),
        "reduce_short_index": lambda lib, e: e["m"].index_reduce_(0, lib.tensor([1], dtype=lib.int16),
                                                                  lib.ones(1, 3), "prod"),
        "copy_int_index": lambda lib, e: e["m"].index_copy_(0, lib.tensor([1], dtype=lib.int32), lib.ones(1, 3)),
        "copy_float_index_and_dtype": lambda lib, e: e["m"].index_copy_(0, lib.tensor([1.0]),
                                                                        lib.ones(1, 3, dtype=lib.float64)),
        "copy_matrix_index": lambda lib, e: e["m"].index_copy_(0, lib.tensor([[1]]), lib.ones(1, 3)),
        "copy_source_dtype": lambda lib, e: e["m"].index_copy_(0, lib.tensor([1]), lib.ones(1, 3, dtype=lib.float64)),
        "copy_scalar_source": lambda lib, e: e["m"].index_copy_(0, lib.tensor([0, 1]), lib.tensor(1.0)),
        "copy_source_rank": lambda lib, e: e["m"].index_copy_(0, lib.tensor([1.0]), lib.ones(3)),
        "copy_slice_shapes": lambda lib, e: e["m"].index_copy_(1, lib.tensor([1]), lib.ones(2, 1)),
    }.items()},
    # ---- a mask that does not broadcast with self: torch's size message, the mask as tensor a ----
    "masked_fill_mask_shape": (lambda lib: {}, lambda lib, e: lib.ones(4, 3).masked_fill(
        lib.eye(4, dtype=lib.bool), 0.0)),
    "masked_fill_tensor_value_mask_shape": (lambda lib: {}, lambda lib, e: lib.masked_fill(
        lib.ones(4, 3), lib.ones(5, 1, dtype=lib.bool), lib.tensor(2.0))),
    # ---- three operands that do not broadcast: torch folds them in order, tensor a the shape so far ----
    **{f"broadcast_{name}": (lambda lib: {}, action) for name, action in {
        "where_condition": lambda lib, e: lib.where(lib.ones(2, dtype=lib.bool), lib.ones(2, 3), lib.ones(2, 3)),
        "where_condition_first": lambda lib, e: lib.where(lib.ones(2, 1, dtype=lib.bool), lib.ones(3), lib.ones(4)),
        "where_other": lambda lib, e: lib.where(lib.ones(2, 3, dtype=lib.bool), lib.ones(3), lib.ones(4, 3)),
        "where_scalar": lambda lib, e: lib.where(lib.ones(3, dtype=lib.bool), 1.0, lib.ones(2)),
        "where_method": lambda lib, e: lib.ones(2, 3).where(lib.ones(2, dtype=lib.bool), 0.0),
        "addcmul_third": lambda lib, e: lib.addcmul(lib.ones(3), lib.ones(3), lib.ones(2)),
        "addcmul_fold": lambda lib, e: lib.addcmul(lib.ones(2, 1), lib.ones(3), lib.ones(4)),
        "addcdiv_second": lambda lib, e: lib.addcdiv(lib.ones(3), lib.ones(2), lib.ones(3)),
        "lerp_weight": lambda lib, e: lib.lerp(lib.ones(3), lib.ones(3), lib.ones(2)),
    }.items()},
    # ---- selections torch's CPU kernels refuse for bool and complex (a boolean mask's topk, say) ----
    **{f"select_{name}": (lambda lib: {}, action) for name, action in {
        "topk_bool": lambda lib, e: lib.topk(lib.tensor([True, False, True]), 2),
        "topk_bool_k_out_of_range": lambda lib, e: lib.tensor([True, False]).topk(3),
        "topk_complex_0d": lambda lib, e: lib.tensor(1j).topk(1),
        "kthvalue_bool": lambda lib, e: lib.ones(0, 3, dtype=lib.bool).kthvalue(1, dim=1),
        "kthvalue_complex": lambda lib, e: lib.ones(3, dtype=lib.complex64).kthvalue(2),
        "median_bool": lambda lib, e: lib.tensor(True).median(),
        "median_dim_bool": lambda lib, e: lib.ones(2, 0, dtype=lib.bool).median(0),
        "nanmedian_dim_complex": lambda lib, e: lib.ones(2, 3, dtype=lib.complex128).nanmedian(1),
        "mode_complex": lambda lib, e: lib.ones(3, dtype=lib.complex64).mode(0),
    }.items()},
    # ---- distances: torch's checks in its order, its kernels float32/float64 only (off the matrix-product path) ----
    **{f"distance_{name}": (lambda lib: {}, action) for name, action in {
        "cdist_half": lambda lib, e: lib.cdist(lib.ones(3, 2, dtype=lib.float16), lib.ones(4, 2, dtype=lib.float16)),
        "cdist_bfloat16_p1": lambda lib, e: lib.cdist(lib.ones(30, 2, dtype=lib.bfloat16),
                                                      lib.ones(4, 2, dtype=lib.bfloat16), p=1),
        "cdist_long": lambda lib, e: lib.cdist(lib.ones(3, 2, dtype=lib.long), lib.ones(4, 2, dtype=lib.long), p=-1),
        "cdist_int_x2": lambda lib, e: lib.cdist(lib.ones(3, 2), lib.ones(4, 2, dtype=lib.int32)),
        "cdist_mode_before_shapes": lambda lib, e: lib.cdist(lib.ones(3), lib.ones(4, 2), compute_mode="fast"),
        "pdist_half": lambda lib, e: lib.pdist(lib.ones(3, 2, dtype=lib.float16)),
        "pdist_long": lambda lib, e: lib.pdist(lib.ones(3, 2, dtype=lib.long), p=-1),
    }.items()},
    # ---- products of two dtypes: each refused in the words of the kernel torch reaches (mm, mv, bmm) ----
    **{f"mixed_dtypes_{name}": (_mixed_dtypes, action) for name, action in {
        "bmm": lambda lib, e: lib.bmm(e["f3"], e["d3"]),
        "bmm_long_half": lambda lib, e: e["d3"].long().bmm(e["f3"].half()),
        "matmul_batches": lambda lib, e: e["f3"] @ e["d3"],
        "matmul_broadcast_batches": lambda lib, e: lib.ones(2, 2, 3, 3) @ e["d3"],
        "matmul_batch_matrix": lambda lib, e: e["f3"] @ e["d2"],
        "matmul_batch_vector": lambda lib, e: e["f3"] @ e["d1"],
        "matmul_matrix_batch": lambda lib, e: e["f2"] @ e["d3"],
        "matmul_grad_matrix_batch": lambda lib, e: e["f2"].requires_grad_() @ e["d3"],
        "matmul_grad_vector_batch": lambda lib, e: e["f1"].requires_grad_() @ e["d3"],
        "mv": lambda lib, e: lib.mv(e["d2"], e["f1"]),
        "matmul_matrix_vector": lambda lib, e: e["f2"] @ e["d1"],
        "baddbmm_batches": lambda lib, e: lib.baddbmm(e["f3"], e["f3"], e["d3"]),
        "baddbmm_input": lambda lib, e: lib.baddbmm(e["d3"], e["f3"], e["f3"]),
        "baddbmm_batch1": lambda lib, e: lib.baddbmm(e["f3"], e["d3"], e["f3"]),
        # einsum contracts a pair by bmm where a label both have is summed between them (swapped where torch swaps)
        "einsum_contraction": lambda lib, e: lib.einsum("b l d, b d n -> b l n", e["f3"], e["d3"]),
        "einsum_swapped": lambda lib, e: lib.einsum("jk,ij->ki", e["f2"], e["d2"]),
        "einsum_full_sum": lambda lib, e: lib.einsum("ij,ij->", e["d2"], e["f2"]),
        "einsum_second_pair": lambda lib, e: lib.einsum("ij,jk,k->i", e["f2"], e["f2"], e["d1"]),
        "einsum_long": lambda lib, e: lib.einsum("ij,j->i", e["d2"], e["f1"].long()),
    }.items()},
    "einsum_output_label_not_in_inputs": (lambda lib: {}, lambda lib, e: lib.einsum("ab,bc->ad", lib.ones(2, 3),
                                                                                    lib.ones(3, 4))),
    "einsum_output_label_twice": (lambda lib: {}, lambda lib, e: lib.einsum("ab->aa", lib.ones(2, 3))),
    # sizes: a size 1 broadcasts, so the size a later operand is refused against is the last other than 1
    "einsum_label_sizes": (lambda lib: {}, lambda lib, e: lib.einsum("ij,jk,kl", lib.ones(2, 3), lib.ones(1, 4),
                                                                     lib.ones(5, 2))),
    "einsum_repeated_label_sizes": (lambda lib: {}, lambda lib, e: lib.einsum("ii->i", lib.ones(3, 1))),
    "einsum_ellipsis_sizes": (lambda lib: {}, lambda lib, e: lib.einsum("...i,...i", lib.ones(5, 2, 3),
                                                                        lib.ones(4, 3))),
    "einsum_digit_label": (lambda lib: {}, lambda lib, e: lib.einsum("i1,1j->ij", lib.ones(2, 1), lib.ones(1, 3))),
    "einsum_output_symbol_after_spaces": (lambda lib: {}, lambda lib, e: lib.einsum("ab , bc -> a$", lib.ones(2, 3),
                                                                                    lib.ones(3, 4))),
    # gels assumes full rank: an exact zero on its triangular factor's diagonal is torch's LinAlgError
    **{f"lstsq_gels_{name}": (lambda lib: {}, action) for name, action in {
        "zero_column": lambda lib, e: lib.linalg.lstsq(lib.tensor([[1.0, 0.0], [0.0, 0.0], [2.0, 0.0]]),
                                                       lib.ones(3, 1), driver="gels"),
        "batch_element": lambda lib, e: lib.linalg.lstsq(lib.tensor([[[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]],
                                                                    [[1.0, 0.0], [0.0, 0.0], [0.0, 0.0]]]),
                                                         lib.ones(2, 3), driver="gels"),
        "wide_zero_row": lambda lib, e: lib.linalg.lstsq(lib.tensor([[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]],
                                                                    dtype=lib.complex64),
                                                         lib.ones(2, dtype=lib.complex64), driver="gels"),
    }.items()},
    "lstsq_dtypes": (lambda lib: {}, lambda lib, e: lib.linalg.lstsq(lib.ones(2, 2),
                                                                      lib.ones(2, 1, dtype=lib.float64))),
    "cat_nothing": (lambda lib: {}, lambda lib, e: lib.cat([])),
    "concatenate_nothing": (lambda lib: {}, lambda lib, e: lib.concatenate((), dim=0)),
    # ---- in-place ops that read memory they partly write ----
    "inplace_add_own_transpose": (_square, lambda lib, e: e["m"].add_(e["m"].t())),
    "inplace_transpose_add_base": (_square, lambda lib, e: e["m"].t().add_(e["m"])),
    "inplace_add_shifted_window": (_square, lambda lib, e: e["m"].view(-1)[1:].add_(e["m"].view(-1)[:-1])),
    "inplace_mul_own_row": (_square, lambda lib, e: e["m"].mul_(e["m"][0])),
    "inplace_iadd_own_transpose": (_square, lambda lib, e: e["m"].__iadd__(e["m"].t())),
    "inplace_clamp_min_shifted": (_square, lambda lib, e: e["m"].view(-1)[1:].clamp_(min=e["m"].view(-1)[:-1])),
    "copy_own_transpose": (_square, lambda lib, e: e["m"].copy_(e["m"].t())),
    "copy_own_row": (_square, lambda lib, e: e["m"].copy_(e["m"][0])),
    # ---- batch norm on inputs of the wrong rank or size (the running statistics must stay as they were) ----
    **{f"batch_norm_{name}": (_norm_stats, action) for name, action in {
        "module_1d": lambda lib, e: lib.nn.BatchNorm1d(3)(lib.ones(3)),
        "module_4d_in_1d": lambda lib, e: lib.nn.BatchNorm1d(3)(lib.ones(2, 3, 4, 5)),
        "module_3d_in_2d": lambda lib, e: lib.nn.BatchNorm2d(3)(lib.ones(3, 4, 5)),
        "module_one_value": lambda lib, e: lib.nn.BatchNorm1d(3)(lib.ones(1, 3, 1)),
        "one_value_before_sizes": lambda lib, e: lib.nn.functional.batch_norm(
            lib.ones(1, 3), lib.zeros(4), e["var"], training=True),
        "functional_1d": lambda lib, e: lib.nn.functional.batch_norm(lib.ones(3), e["mean"], e["var"]),
        "functional_0d": lambda lib, e: lib.nn.functional.batch_norm(lib.tensor(1.0), e["mean"], e["var"]),
        "functional_0d_training": lambda lib, e: lib.nn.functional.batch_norm(lib.tensor(1.0), None, None,
                                                                              training=True),
        "functional_1d_training": lambda lib, e: lib.nn.functional.batch_norm(lib.ones(3), None, None, training=True),
        "functional_1d_weight": lambda lib, e: lib.nn.functional.batch_norm(lib.ones(3), None, None, lib.ones(3),
                                                                            training=True),
        "no_running_var_in_eval": lambda lib, e: lib.nn.functional.batch_norm(lib.ones(2, 3), e["mean"], None),
        "no_running_mean_in_eval": lambda lib, e: lib.nn.functional.batch_norm(lib.ones(3), None, None, lib.ones(3)),
        "running_var_size": lambda lib, e: lib.nn.functional.batch_norm(lib.ones(2, 4), e["mean"].repeat(2)[:4],
                                                                        lib.ones(3)),
    }.items()},
    "quantile_too_large": (lambda lib: {}, lambda lib, e: lib.quantile(lib.zeros(2 ** 24 + 1), 0.5)),
    "nanquantile_too_large_along_dim": (lambda lib: {}, lambda lib, e: lib.zeros(2, 2 ** 24 + 1).nanquantile(0.5, 1)),
    # ---- NumPy arrays of types torch has no dtype for, named by their scalar type ----
    **{f"numpy_{name}_{how}": (lambda lib: {}, lambda lib, e, array=array, how=how: getattr(lib, how)(array()))
       for name, array in (("str", lambda: np.array(["a"])), ("bytes", lambda: np.array([b"a"])),
                           ("object", lambda: np.array([None], dtype=object)))
       for how in ("tensor", "from_numpy")},
    # ---- the _ex factorisations name themselves when they raise; index_add's and index_reduce's bounds ----
    "cholesky_ex_check_errors": (lambda lib: {}, lambda lib, e: lib.linalg.cholesky_ex(
        lib.tensor([[1.0, 2.0], [2.0, 1.0]]), check_errors=True)),
    "inv_ex_check_errors": (lambda lib: {}, lambda lib, e: lib.linalg.inv_ex(lib.zeros(2, 2), check_errors=True)),
    "linalg_norm_fro_of_vector": (lambda lib: {}, lambda lib, e: lib.linalg.norm(lib.ones(3), "fro")),
    "solve_triangular_without_upper": (lambda lib: {}, lambda lib, e: lib.linalg.solve_triangular(lib.eye(2),
                                                                                                    lib.eye(2))),
    "index_add_vector_out_of_range": (lambda lib: {"x": _leaf(lib)}, lambda lib, e: e["x"].detach().index_add_(
        0, lib.tensor([-4]), lib.ones(1))),
    "index_add_rows_out_of_range": (lambda lib: {}, lambda lib, e: lib.zeros(3, 2).index_add(
        0, lib.tensor([-1]), lib.ones(1, 2))),
    "cdist_mixed_dtypes": (lambda lib: {}, lambda lib, e: lib.cdist(lib.ones(2, 3), lib.ones(2, 3).double())),
    "cdist_mixed_dtypes_by_products": (lambda lib: {}, lambda lib, e: lib.cdist(lib.ones(30, 3),
                                                                                 lib.ones(30, 3).double())),
    "repeat_interleave_matrix_of_repeats": (lambda lib: {}, lambda lib, e: lib.repeat_interleave(
        lib.ones(2), lib.tensor([[1, 2]]))),
    **{f"einsum_dots_{equation}": (lambda lib: {}, lambda lib, e, equation=equation: lib.einsum(
        equation, lib.ones(2, 3))) for equation in ("......i->i", "..i->i", "...ij->..ij", "...ij->......ij")},
    **{f"index_out_of_range_{key}": (lambda lib: {}, lambda lib, e, key=key: eval(  # noqa: S307 - the key's text
        f"lib.zeros(3, 4, 5){key}")) for key in ("[0, 4]", "[None, 0, 6]", "[..., 7]", "[1, None, 4]")},
    **{f"embedding_{dtype}_indices": (lambda lib: {}, lambda lib, e, dtype=dtype: lib.nn.functional.embedding(
        lib.tensor([1, 0]).to(getattr(lib, dtype)), lib.ones(3, 2))) for dtype in ("uint8", "int16", "bool")},
    **{f"interpolate_{name}": (lambda lib: {}, lambda lib, e, call=call: call(lib, lib.nn.functional.interpolate))
       for name, call in {
           "size_of_too_few_dims": lambda lib, f: f(lib.ones(1, 3, 8, 8), size=(8,)),
           "size_of_too_many_dims": lambda lib, f: f(lib.ones(3, 8, 8), size=(16, 16)),
           "matrix_input": lambda lib, f: f(lib.ones(8, 8), scale_factor=2),
           "six_dims": lambda lib, f: f(lib.ones(1, 1, 2, 2, 2, 2), size=4),
           "size_zero": lambda lib, f: f(lib.ones(1, 3, 8, 8), size=0),
           "negative_scale": lambda lib, f: f(lib.ones(1, 3, 8), scale_factor=-1),
           "float_in_size": lambda lib, f: f(lib.ones(1, 3, 8, 8), size=(16, 16.5)),
           "bicubic_of_five_dims": lambda lib, f: f(lib.ones(1, 1, 2, 2, 2), scale_factor=2, mode="bicubic"),
           "scale_of_too_few_dims": lambda lib, f: f(lib.ones(1, 3, 8, 8), scale_factor=(2,)),
       }.items()},
    **{f"zero_{name}": (lambda lib: {}, lambda lib, e, call=call: call(lib, lib.nn.functional, lib.ones))
       for name, call in {
           "conv1d_kernel": lambda lib, f, ones: f.conv1d(ones(1, 3, 5), ones(2, 3, 0)),
           "conv2d_kernel": lambda lib, f, ones: f.conv2d(ones(1, 3, 5, 5), ones(2, 3, 0, 3)),
           "conv3d_kernel": lambda lib, f, ones: f.conv3d(ones(1, 3, 5, 5, 5), ones(2, 3, 0, 0, 0)),
           "conv1d_dilation": lambda lib, f, ones: f.conv1d(ones(1, 3, 5), ones(2, 3, 3), dilation=0),
           "max_pool1d_stride": lambda lib, f, ones: f.max_pool1d(ones(1, 3, 5), 2, stride=0),
           "max_pool1d_dilation": lambda lib, f, ones: f.max_pool1d(ones(1, 3, 5), 2, dilation=0),
           "max_pool1d_output": lambda lib, f, ones: f.max_pool1d(ones(1, 3, 1), 2),
           "max_pool2d_stride": lambda lib, f, ones: f.max_pool2d(ones(1, 3, 5, 5), 2, stride=0),
           "max_pool2d_dilation": lambda lib, f, ones: f.max_pool2d(ones(1, 3, 5, 5), 2, dilation=0),
           "max_pool3d_dilation": lambda lib, f, ones: f.max_pool3d(ones(1, 3, 5, 5, 5), 2, dilation=0),
           "avg_pool1d_stride": lambda lib, f, ones: f.avg_pool1d(ones(1, 3, 5), 2, stride=0),
           "avg_pool3d_stride": lambda lib, f, ones: f.avg_pool3d(ones(1, 3, 5, 5, 5), 2, stride=0),
       }.items()},
    **{f"adaptive_{name}": (lambda lib: {}, lambda lib, e, call=call: call(lib.nn.functional, lib.ones))
       for name, call in {
           "avg_pool2d_negative": lambda f, ones: f.adaptive_avg_pool2d(ones(1, 3, 5, 5), -1),
           "avg_pool3d_negative": lambda f, ones: f.adaptive_avg_pool3d(ones(1, 3, 5, 5, 5), (2, -1, 2)),
           "avg_pool1d_negative": lambda f, ones: f.adaptive_avg_pool1d(ones(1, 3, 5), -1),
           "max_pool2d_negative": lambda f, ones: f.adaptive_max_pool2d(ones(1, 3, 5, 5), -1),
           "max_pool1d_negative": lambda f, ones: f.adaptive_max_pool1d(ones(1, 3, 5), -1),
           "avg_pool2d_empty": lambda f, ones: f.adaptive_avg_pool2d(ones(1, 3, 0, 4), 2),
           "avg_pool2d_unbatched_empty": lambda f, ones: f.adaptive_avg_pool2d(ones(3, 0, 4), 2),
           "avg_pool1d_empty": lambda f, ones: f.adaptive_avg_pool1d(ones(1, 3, 0), 2),
           "max_pool1d_empty": lambda f, ones: f.adaptive_max_pool1d(ones(1, 3, 0), 2),
           "max_pool3d_empty": lambda f, ones: f.adaptive_max_pool3d(ones(1, 3, 0, 4, 4), 2),
       }.items()},
    **{f"shape_{name}": (lambda lib: {}, lambda lib, e, call=call: call(lib.nn.functional, lib.ones))
       for name, call in {
           "pad_narrowing_below_zero": lambda f, ones: f.pad(ones(3), (-2, -2)),
           "pad_narrowing_then_padding": lambda f, ones: f.pad(ones(3), (-4, 1)),
           "pixel_shuffle_of_a_matrix": lambda f, ones: f.pixel_shuffle(ones(4, 4), 2),
           "pixel_unshuffle_of_a_matrix": lambda f, ones: f.pixel_unshuffle(ones(4, 4), 2),
           "conv_transpose1d_too_small": lambda f, ones: f.conv_transpose1d(ones(1, 8, 2), ones(8, 3, 1), padding=3),
           "conv_transpose2d_too_small": lambda f, ones: f.conv_transpose2d(ones(1, 8, 2, 2), ones(8, 3, 1, 1),
                                                                            padding=1),
       }.items()},
    **{f"recurrent_{name}": (lambda lib: {}, lambda lib, e, call=call: call(lib.nn, lib.zeros))
       for name, call in {
           "lstm_hidden_size": lambda nn, z: nn.LSTM(4, 5, 2)(z(3, 2, 4), (z(1, 2, 5), z(2, 2, 5))),
           "lstm_cell_size": lambda nn, z: nn.LSTM(4, 5, 2)(z(3, 2, 4), (z(2, 2, 5), z(1, 2, 5))),
           "lstm_hidden_rank": lambda nn, z: nn.LSTM(4, 5, 2)(z(3, 2, 4), (z(2, 5), z(2, 5))),
           "lstm_unbatched_hidden_rank": lambda nn, z: nn.LSTM(4, 5, 2)(z(3, 4), (z(2, 1, 5), z(2, 1, 5))),
           "lstm_three_states": lambda nn, z: nn.LSTM(4, 5, 2)(z(3, 2, 4), (z(2, 2, 5), z(2, 2, 5), z(2, 2, 5))),
           "gru_hidden_rank": lambda nn, z: nn.GRU(4, 5, 2)(z(3, 2, 4), z(2, 5)),
           "gru_unbatched_hidden_rank": lambda nn, z: nn.GRU(4, 5, 2)(z(3, 4), z(2, 1, 5)),
           "gru_hidden_size": lambda nn, z: nn.GRU(4, 5, 2)(z(3, 2, 4), z(1, 2, 5)),
           "lstm_cell_input_size": lambda nn, z: nn.LSTMCell(4, 5)(z(3, 6)),
           "lstm_cell_batch": lambda nn, z: nn.LSTMCell(4, 5)(z(3, 4), (z(2, 5), z(2, 5))),
           "lstm_cell_second_state_size": lambda nn, z: nn.LSTMCell(4, 5)(z(3, 4), (z(3, 5), z(3, 6))),
           "lstm_cell_state_rank": lambda nn, z: nn.LSTMCell(4, 5)(z(3, 4), (z(1, 3, 5), z(1, 3, 5))),
           "gru_cell_state_rank": lambda nn, z: nn.GRUCell(4, 5)(z(3, 4), z(1, 3, 5)),
           "rnn_cell_unbatched_state": lambda nn, z: nn.RNNCell(4, 5)(z(4), z(1, 5)),
       }.items()},
    "function_output_modified": (_function_output_modified, lambda lib, e: e["y"].sum().backward()),
    "index_reduce_out_of_range": (lambda lib: {}, lambda lib, e: lib.zeros(3, 2).index_reduce(
        1, lib.tensor([2]), lib.ones(3, 1), "prod")),
}


def _snapshot(env: dict) -> dict:
    state = {}
    for key, value in env.items():
        for i, t in enumerate(value if isinstance(value, (tuple, list)) else (value,)):
            grad = t.grad if t.is_leaf else None
            state[f"{key}{i}"] = (t.detach().numpy().copy(), None if grad is None else grad.numpy().copy())
    return state


def _run(lib, case: str):
    setup, action = CASES[case]
    env = setup(lib)
    before = _snapshot(env)
    with pytest.raises(Exception) as info:
        action(lib, env)
    return info.value, before, _snapshot(env)


def _headline(err: BaseException) -> str:
    return str(err).split("\n")[0].strip()


@pytest.mark.parametrize("case", sorted(CASES))
def test_misuse_matches_torch(case: str) -> None:
    expected, _, _ = _run(torch, case)
    got, before, after = _run(retrograd, case)
    assert type(got).__name__ == type(expected).__name__
    assert _headline(got) == _headline(expected)
    assert before.keys() == after.keys()
    for key, (value, grad) in before.items():
        np.testing.assert_array_equal(after[key][0], value, err_msg=f"{key} changed by the failed call")
        if grad is None:
            assert after[key][1] is None, f"{key}.grad created by the failed call"
        else:
            np.testing.assert_array_equal(after[key][1], grad, err_msg=f"{key}.grad changed by the failed call")


def test_scatter_with_reduce_warns_of_its_deprecation_once_as_torch():
    """scatter's reduce= with a tensor src is deprecated: torch warns once per process (a number src not at all).
    retrograd's once is reset here; torch's may have gone off earlier in this process, and is compared when not."""
    import warnings

    from retrograd import _warn

    seen = []
    for lib in (torch, retrograd):
        _warn._warned.difference_update({w for w in _warn._warned if w.startswith("The reduce argument of")})
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lib.zeros(3).scatter_(0, lib.tensor([0, 0]), 2.0, reduce="add")
            values = [lib.zeros(3).scatter(0, lib.tensor([0, 0]), lib.ones(2), reduce=r).tolist()
                      for r in ("add", "multiply")]
        seen.append((values, [str(w.message) for w in caught]))
    assert seen[1][0] == seen[0][0]
    assert len(seen[1][1]) == 1 and seen[1][1][0].startswith("The reduce argument of torch.scatter with Tensor src")
    if seen[0][1]:
        assert seen[1][1] == seen[0][1]


def test_searchsorted_of_non_contiguous_tensors_warns_once_as_torch():
    """torch copies a non-contiguous input or boundary tensor and says so, once per program for each; retrograd's
    once is reset here, torch's compared when this process had not seen it yet."""
    import warnings

    from retrograd import _warn

    seen = []
    for lib in (torch, retrograd):
        _warn._warned.difference_update({w for w in _warn._warned if w.startswith("torch.searchsorted(): ")})
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            x = lib.arange(6.0).view(3, 2)
            values = [lib.bucketize(x[:, 1], lib.tensor([1.0, 3.0])).tolist(),
                      lib.searchsorted(lib.tensor([1.0, 3.0, 5.0, 7.0])[::2], x[:, 1]).tolist(),
                      lib.searchsorted(lib.tensor([[1.0, 3.0], [2.0, 4.0]]).t(), lib.ones(2, 1)).tolist()]
        seen.append((values, [str(w.message) for w in caught]))
    assert seen[1][0] == seen[0][0]
    assert [m[:50] for m in seen[1][1]] == ["torch.searchsorted(): input value tensor is non-co",
                                            "torch.searchsorted(): boundary tensor is non-conti"]
    if len(seen[0][1]) == 2:
        assert seen[1][1] == seen[0][1]
