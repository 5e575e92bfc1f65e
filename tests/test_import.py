"""What `import retrograd` loads (Note [lazy submodules] in retrograd/__init__.py) and what it leaves for first use:
the heavy families and numpy.random load when touched, the rule table's rows compile on first use (Note [compiled
on first use] in ops/registry.py). Each check runs in a fresh interpreter, as the modules an import loads can only
be seen there; none measures time."""

import json
import keyword
import subprocess
import sys

import pytest

import retrograd
from retrograd.ops.registry import OPS, Op

HEAVY = ["retrograd.nn", "retrograd.nn.functional", "retrograd.optim", "retrograd.linalg", "retrograd.func",
         "retrograd.serialization", "retrograd.testing", "retrograd.utils", "retrograd.utils.data",
         "retrograd.datasets", "retrograd.viz", "retrograd.amp", "retrograd.autograd.batched", "numpy.random",
         "retrograd.profiler", "retrograd.autograd.profiler", "retrograd.multiprocessing", "retrograd.nn.attention"]


def _run(code: str) -> object:
    """The JSON a fresh interpreter prints after running `code`."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_leaves_heavy_families_for_first_use():
    loaded = _run(f"import sys, json, retrograd; print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))")
    assert loaded == []


def test_lazy_families_load_on_first_touch():
    code = """
import sys, json, pickle
import retrograd as torch
linear = torch.nn.Linear(2, 3)
from retrograd import optim
import retrograd.nn.functional as F
restored = pickle.loads(pickle.dumps(linear))
print(json.dumps([type(restored).__module__, optim.SGD.__module__, F.relu.__name__, torch.load.__module__,
                  torch.vmap.__name__, torch.linalg.norm is not None, "retrograd.nn" in sys.modules,
                  "nn" in dir(torch), "retrograd.optim" in sys.modules]))
"""
    assert _run(code) == ["retrograd.nn.modules.linear", "retrograd.optim.sgd", "relu", "retrograd.serialization",
                          "vmap", True, True, True, True]


def test_profiler_attention_and_multiprocessing_load_on_first_touch():
    """As torch's, they are attributes after `import torch` alone (torch.autograd.profiler, torch.nn.attention)."""
    code = """
import json
import retrograd as torch
print(json.dumps([torch.profiler.profile.__module__, torch.autograd.profiler.record_function.__module__,
                  torch.nn.attention.SDPBackend.__module__, torch.multiprocessing.spawn.__module__,
                  "profiler" in dir(torch), "multiprocessing" in dir(torch)]))
"""
    assert _run(code) == ["retrograd.profiler", "retrograd.autograd.profiler", "retrograd.nn.attention",
                          "retrograd.multiprocessing.spawn", True, True]


def test_missing_names_still_say_retrograd_lacks_them():
    with pytest.raises(AttributeError, match=r"^retrograd does not support torch\.not_a_torch_name yet$"):
        retrograd.not_a_torch_name  # noqa: B018 - the attribute access is the test


def test_rows_compile_on_first_use():
    code = """
import json
import retrograd
from retrograd.ops.registry import OPS
before = OPS["expm1"].vjps is None
x = retrograd.tensor([0.5, 1.0], requires_grad=True)
y = retrograd.expm1(x)
after_forward = OPS["expm1"].vjps is not None
y.sum().backward()
print(json.dumps([before, after_forward, x.grad.tolist()]))
"""
    before, after_forward, grad = _run(code)
    assert before and after_forward
    assert grad == pytest.approx([1.6487212707, 2.7182818284])  # d expm1 / dx = exp(x)


def test_backward_compiles_a_row_first_met_in_backward():
    """A node of a row not compiled yet (made by the generic entry point, as variadic rows are) compiles
    the row when backward first reaches it."""
    code = """
import json
import retrograd
from retrograd.ops.registry import OPS
x = retrograd.tensor([1.0, 2.0], requires_grad=True)
out = retrograd.stack([x, x * 3])
before = OPS["stack"].vjps is None
out.sum().backward()
print(json.dumps([before, OPS["stack"].vjps is not None, x.grad.tolist()]))
"""
    assert _run(code) == [True, True, [4.0, 4.0]]


@pytest.mark.parametrize("op", sorted(OPS), ids=str)
def test_formula_names_read_from_text_match_the_compiler(op):
    """Op._referenced_names reads a formula's names off its text; the compiler's names, keywords aside,
    must be the same set (they decide what a node saves)."""
    row = OPS[op]
    for source in [*row.vjp_src.values(), row.jvp_src or ""]:
        if not source.strip():
            continue
        names, todo = set(), [compile(source, "<rule>", "eval")]
        while todo:
            code = todo.pop()
            names.update(code.co_names, code.co_varnames, code.co_freevars)
            todo.extend(c for c in code.co_consts if hasattr(c, "co_names"))
        compiled = {n for n in names if not n.startswith(".")} - set(keyword.kwlist)  # ".0": a comprehension's
        assert set(Op._referenced_names(source)) - set(keyword.kwlist) == compiled, source


def test_each_row_of_the_table_has_a_name_of_its_own():
    """A second row under a row's name replaced it in the table, so the first was never prepared for first use
    (mul_scalar's JVP was missing when trapezoid's forward AD was the first to call it)."""
    import retrograd.ops as ops
    from retrograd.ops.registry import OPS, Op

    rows = {id(value): value for module in vars(ops).values() if isinstance(module, type(ops))
            for value in vars(module).values() if isinstance(value, Op)}
    assert [op.name for op in rows.values() if OPS.get(op.name) is not op] == []
