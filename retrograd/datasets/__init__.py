"""Small real data sets shipped inside the package (no download), for the demo and examples.

`load_digits()`: the UCI optical recognition of handwritten digits test set, 1,797 images of
8x8 pixels with values 0..16 and labels 0..9 (E. Alpaydin and C. Kaynak, 1998; CC BY 4.0; see
README.md beside this file for the source and licence).
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np

from .. import from_numpy
from .._tensor import Tensor

_HERE = Path(__file__).resolve().parent


def load_digits() -> tuple[Tensor, Tensor]:
    """(images, labels): float32 (1797, 8, 8) pixel counts in 0..16 and int64 (1797,) digits.

    >>> images, labels = load_digits()
    >>> images.shape, labels[:5].tolist()
    (torch.Size([1797, 8, 8]), [0, 1, 2, 3, 4])
    """
    with gzip.open(_HERE / "digits.csv.gz", "rt") as handle:
        table = np.loadtxt(handle, delimiter=",", dtype=np.float32)
    images = np.ascontiguousarray(table[:, :64].reshape(-1, 8, 8))
    labels = table[:, 64].astype(np.int64)
    return from_numpy(images), from_numpy(labels)


__all__ = ["load_digits"]
