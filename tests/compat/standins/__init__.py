"""The project's own stand-ins for `torch.testing._internal`, the helpers PyTorch's test files import.

Small and strict: `TestCase.assertEqual` compares values, dtypes and shapes as torch's does, the
parametrisation and device instantiation produce torch's test names (CPU only). The compatibility
runner maps `torch.testing._internal.<name>` to `standins.<name>` under torch and under retrograd
alike, so the torch column of its table is the control for these files. `tests/test_compat.py`
checks that they fail on wrong values, dtypes, shapes and a wrong backward.
"""
