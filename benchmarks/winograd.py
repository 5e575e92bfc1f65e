"""Winograd's F(2,3) along the rows against retrograd's im2col convolution (PROFILE.md, "Ninth round").

python -m benchmarks.winograd [--batch N --channels C --size S]: for a 3x3, stride-1, padding-1 float32 convolution
(by default the ResNet workload's 16-channel layer, batch 32 on 32x32) it times retrograd's forward, its GEMMs alone,
torch's conv2d and a Winograd forward stage by stage, and prints each one's largest error against float64. The
Winograd forward takes the kernel's rows as im2col does on flat rows (Note [flat rows] in retrograd/ops/conv.py) and
each row's three taps by F(2,3): four products for two outputs instead of six, so its GEMMs have 4/6 of the direct
ones' multiply-adds, paid for by NumPy passes that transform the input and the output. Run it with one BLAS thread
(OPENBLAS_NUM_THREADS=1), as the suite does; times are CPU milliseconds, the lower quartile of repeated calls.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

# F(2,3): y = A^T [(G g) * (B^T d)] for a 4-sample input tile d and 3 taps g; B^T's rows are the four stages below
_G = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0.0, 0.0, 1.0]])


def lower_quartile_ms(run: Callable[[], object], calls: int = 31) -> float:
    """CPU milliseconds of one call, the lower quartile of `calls` (the machine is shared)."""
    times = []
    for _ in range(calls):
        start = time.process_time()
        run()
        times.append(time.process_time() - start)
    return sorted(times)[calls // 4] * 1e3


class RowWinograd:
    """A 3x3, padding-1 convolution of (n, C, H, W) by (F, C, 3, 3), `part` samples at a time, in buffers reused
    by every call; its stages are methods so that they can be timed one by one."""

    def __init__(self, x: np.ndarray, w: np.ndarray, part: int) -> None:
        n, c, h, width = x.shape
        f = w.shape[0]
        self.x, self.part, self.h, self.w = x, part, h, width
        self.tiles = width // 2 + 1 + width % 2  # output pairs per flat row, the last one junk (Note [flat rows])
        self.length = h * self.tiles  # output pairs per plane
        t = self.tiles
        # U_j (F, (kernel row, C)): the transformed taps of each kernel row
        self.u = np.einsum("jl,fchl->jfhc", _G, w).reshape(4, f, 3 * c).astype(x.dtype)
        self.padded = np.zeros((part, c, h + 3, 2 * t), x.dtype)  # one spare row for the junk pairs' reads
        self.phases = np.empty((2, part, c, (h + 3) * t), x.dtype)  # even and odd columns of each padded plane
        self.columns = np.empty((part, 4, 3, c, self.length), x.dtype)
        self.products = np.empty((part, 4, f, self.length), x.dtype)
        self.sums = np.empty((2, part, f, self.length), x.dtype)
        self.grid = np.empty((part, f, h, 2 * t), x.dtype)
        self.y = np.empty((n, f, h, width), x.dtype)
        self.start = 0

    def pad(self) -> None:
        """Copy this part of x into the zero-padded planes (the border stays zero)."""
        piece = self.x[self.start:self.start + self.part]
        self.padded[:len(piece), :, 1:self.h + 1, 1:self.w + 1] = piece

    def split(self) -> None:
        """The even and odd columns of the padded planes, so that every later pass reads contiguous runs."""
        flat = self.padded.reshape(*self.padded.shape[:2], -1)
        self.phases[0] = flat[..., 0::2]
        self.phases[1] = flat[..., 1::2]

    def transform(self) -> None:
        """B^T d for every pair of every kernel row's window: four subtractions or additions per row."""
        even, odd, n, t = self.phases[0], self.phases[1], self.length, self.tiles
        for row in range(3):
            a, b = row * t, row * t + 1
            np.subtract(even[..., a:a + n], even[..., b:b + n], out=self.columns[:, 0, row])
            np.add(odd[..., a:a + n], even[..., b:b + n], out=self.columns[:, 1, row])
            np.subtract(even[..., b:b + n], odd[..., a:a + n], out=self.columns[:, 2, row])
            np.subtract(odd[..., a:a + n], odd[..., b:b + n], out=self.columns[:, 3, row])

    def multiply(self) -> None:
        """The four products' GEMMs: U_j (F, 3C) @ columns_j (3C, H * tiles), per sample."""
        cols = self.columns.reshape(*self.columns.shape[:2], -1, self.length)
        np.matmul(self.u, cols, out=self.products)

    def inverse(self) -> None:
        """A^T m: the even and odd outputs of each pair, written interleaved on the flat-row grid."""
        m, grid = self.products, self.grid.reshape(*self.grid.shape[:2], -1)
        np.add(m[:, 0], m[:, 1], out=self.sums[0])
        np.subtract(m[:, 1], m[:, 2], out=self.sums[1])
        np.add(self.sums[0], m[:, 2], out=grid[..., 0::2])
        np.subtract(self.sums[1], m[:, 3], out=grid[..., 1::2])

    def crop(self) -> None:
        """The valid columns of the grid into the result."""
        out = self.y[self.start:self.start + self.part]
        out[...] = self.grid[:len(out), ..., :self.w]

    def stages(self) -> list[Callable[[], None]]:
        return [self.pad, self.split, self.transform, self.multiply, self.inverse, self.crop]

    def __call__(self) -> np.ndarray:
        for start in range(0, len(self.x), self.part):
            self.start = start
            for stage in self.stages():
                stage()
        return self.y


def main(argv: list[str] | None = None) -> None:
    import torch

    from retrograd.ops import conv

    parser = argparse.ArgumentParser(prog="python -m benchmarks.winograd", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--channels", type=int, default=16, help="input and output channels (16)")
    parser.add_argument("--size", type=int, default=32, help="height and width (32)")
    parser.add_argument("--part", type=int, default=8, help="samples per Winograd part (8)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    c, s = args.channels, args.size
    x = rng.standard_normal((args.batch, c, s, s)).astype(np.float32)
    w = (rng.standard_normal((c, c, 3, 3)) / np.sqrt(9 * c)).astype(np.float32)
    win = conv.Window((3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1))
    exact = torch.nn.functional.conv2d(torch.from_numpy(x).double(), torch.from_numpy(w).double(), padding=1).numpy()
    tx, tw = torch.from_numpy(x), torch.from_numpy(w)
    winograd = RowWinograd(x, w, args.part)
    length = s * (s + 2)  # the direct forward's columns: flat rows, one batch part at a time (Note [batch parts])
    direct_parts = conv._batch_parts(np, args.batch, 9 * c * length * x.itemsize)
    columns = np.ones((direct_parts[0].stop, 9 * c, length), np.float32)

    def direct_gemms() -> None:
        for _ in direct_parts:
            np.matmul(w.reshape(c, -1), columns)

    runs = {"retrograd im2col forward": lambda: conv._conv(np, x, w, win, 1),
            "  its GEMMs alone, (F, 9C) @ (9C, H * (W + 2)) per sample": direct_gemms,
            "torch conv2d": lambda: torch.nn.functional.conv2d(tx, tw, padding=1),
            "Winograd F(2,3) along rows": winograd}
    for name, run in runs.items():
        result = run()
        error = "" if "GEMM" in name else f"  error {np.abs(np.asarray(result, np.float64) - exact).max():.2e}"
        print(f"{name:60s} {lower_quartile_ms(run):7.3f} ms{error}")
    parts = -(-args.batch // args.part)
    for stage in winograd.stages():
        print(f"  {stage.__name__:58s} {parts * lower_quartile_ms(stage):7.3f} ms")


if __name__ == "__main__":
    main()
