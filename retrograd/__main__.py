"""`python -m retrograd demo`: train a small classifier on the handwritten digits shipped in the package.

The demo is the project's main job, written as a PyTorch user would write it (nn, optim,
DataLoader, a progress bar) with `import retrograd as torch`. It trains an MLP (default) or a
small CNN on the UCI 8x8 digits (1,437 training / 360 test images), prints the test accuracy,
and writes into the output folder: loss_curve.png (matplotlib), graph.png and graph.dot (the
backward graph of one batch's loss, via retrograd.viz) and model.pt (the trained state_dict,
saved with retrograd.save). Missing optional packages only skip the picture they draw, with a
message saying what to install.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import retrograd as torch
from retrograd import nn
from retrograd.datasets import load_digits
from retrograd.utils.data import DataLoader, TensorDataset

TRAIN_SIZE = 1437  # the rest (360 images) is the test set


def build_model(kind: str) -> nn.Module:
    """mlp: 64-128-10 with ReLU; cnn: two 3x3 conv + max-pool blocks and a linear classifier."""
    if kind == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    return nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(16 * 2 * 2, 10),
    )


def split_digits(seed: int) -> tuple[TensorDataset, TensorDataset]:
    """The digits scaled to [0, 1] with a channel dim, shuffled once with `seed`, as train and test sets."""
    images, labels = load_digits()
    images = (images / 16.0).unsqueeze(1)
    order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(seed))
    train, test = order[:TRAIN_SIZE], order[TRAIN_SIZE:]
    return TensorDataset(images[train], labels[train]), TensorDataset(images[test], labels[test])


class _Bar:
    """A one-line progress bar for when tqdm is not installed (redrawn in place on a terminal)."""

    def __init__(self, iterable: Iterable, total: int, desc: str) -> None:
        self.iterable, self.total, self.desc = iterable, total, desc
        self.postfix = ""
        self.live = sys.stderr.isatty()

    def __iter__(self) -> Iterator[Any]:
        start = time.perf_counter()
        for i, item in enumerate(self.iterable, 1):
            yield item
            if self.live or i == self.total:
                filled = int(24 * i / self.total)
                rate = i / max(time.perf_counter() - start, 1e-9)
                line = f"{self.desc} |{'#' * filled}{'.' * (24 - filled)}| {i}/{self.total} [{rate:.0f} it/s] " \
                       f"{self.postfix}"
                sys.stderr.write(("\r" if self.live else "") + line + ("\n" if i == self.total else ""))
                sys.stderr.flush()

    def set_postfix_str(self, text: str, refresh: bool = True) -> None:
        self.postfix = text


def progress(iterable: Iterable, total: int, desc: str) -> Any:
    """tqdm on a terminal when it is installed (the `demo` extra), else the built-in bar (which writes
    one line per epoch into logs)."""
    try:
        from tqdm import tqdm
    except ImportError:
        return _Bar(iterable, total, desc)
    if not sys.stderr.isatty():
        return _Bar(iterable, total, desc)
    return tqdm(iterable, total=total, desc=desc, leave=True, dynamic_ncols=True)


def evaluate(model: nn.Module, data: TensorDataset) -> tuple[float, float]:
    """(mean cross-entropy, accuracy) on a whole data set, without recording a graph."""
    model.eval()
    images, labels = data.tensors
    with torch.no_grad():
        logits = model(images)
        loss = nn.functional.cross_entropy(logits, labels).item()
        accuracy = (logits.argmax(1) == labels).float().mean().item()
    model.train()
    return loss, accuracy


def save_loss_curve(history: dict, path: Path) -> str:
    """Training loss per batch and test loss per epoch, as a PNG (needs matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "loss curve skipped: matplotlib is not installed (pip install 'retrograd[demo]')"
    fig, ax = plt.subplots(figsize=(7, 4), dpi=120)
    per_epoch = history["batches_per_epoch"]
    steps = [i / per_epoch for i in range(1, len(history["train"]) + 1)]
    ax.plot(steps, history["train"], lw=0.8, alpha=0.6, label="training loss (per batch)")
    ax.plot(range(1, len(history["test"]) + 1), history["test"], "o-", label="test loss (per epoch)")
    ax.set_xlabel("epoch")
    ax.set_ylabel("cross-entropy")
    ax.set_yscale("log")
    ax.set_title(f"retrograd: {history['model']} on UCI digits, test accuracy {history['accuracy']:.1%}")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return f"loss curve  -> {path}"


def save_graph(model: nn.Module, data: TensorDataset, folder: Path) -> str:
    """The backward graph of the loss of four test images: DOT text always, a PNG when Graphviz can render."""
    from retrograd import viz

    images, labels = data.tensors
    loss = nn.functional.cross_entropy(model(images[:4]), labels[:4])
    try:
        dot = viz.draw_graph(loss, params=dict(model.named_parameters()))
    except ImportError as error:
        return f"graph skipped: {error}"
    (folder / "graph.dot").write_text(dot.source)
    if not viz.can_render():
        return (f"graph DOT   -> {folder / 'graph.dot'} (no PNG: the Graphviz program 'dot' is not installed; "
                "apt-get install graphviz)")
    return f"graph       -> {viz.render_graph(dot, folder / 'graph.png')}"


def train(kind: str, epochs: int, batch_size: int, lr: float, seed: int, out: Path) -> float:
    """Train, report, write the pictures and the weights; returns the final test accuracy."""
    torch.manual_seed(seed)
    train_set, test_set = split_digits(seed)
    model = build_model(kind)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)
    loader = DataLoader(train_set, batch_size=batch_size, shuffle=True,
                        generator=torch.Generator().manual_seed(seed))
    loss_fn = nn.CrossEntropyLoss()
    n_params = sum(p.numel() for p in model.parameters())
    print(f"retrograd demo: {kind} ({n_params:,} parameters) on UCI handwritten digits "
          f"({len(train_set)} train / {len(test_set)} test images of 8x8), {epochs} epochs, Adam lr={lr}")
    history: dict = {"train": [], "test": [], "batches_per_epoch": len(loader), "model": kind}
    start = time.perf_counter()
    accuracy = 0.0
    for epoch in range(1, epochs + 1):
        bar = progress(loader, len(loader), f"epoch {epoch:2d}/{epochs}")
        for images, labels in bar:
            loss = loss_fn(model(images), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            history["train"].append(loss.item())
            bar.set_postfix_str(f"loss {loss.item():.4f}", refresh=False)
        scheduler.step()
        test_loss, accuracy = evaluate(model, test_set)
        history["test"].append(test_loss)
        print(f"epoch {epoch:2d}: test loss {test_loss:.4f}, test accuracy {accuracy:.1%}")
    elapsed = time.perf_counter() - start
    history["accuracy"] = accuracy
    print(f"test accuracy {accuracy:.1%} ({round(accuracy * len(test_set))}/{len(test_set)}) after {epochs} epochs "
          f"in {elapsed:.1f} s")
    out.mkdir(parents=True, exist_ok=True)
    torch.save(model.state_dict(), out / "model.pt")
    print(f"weights     -> {out / 'model.pt'} (retrograd.load reads them back)")
    print(save_loss_curve(history, out / "loss_curve.png"))
    print(save_graph(model, test_set, out))
    return accuracy


def _positive(kind: type) -> Any:
    def parse(text: str) -> Any:
        value = kind(text)
        if not value > 0 or (isinstance(value, float) and math.isinf(value)):
            raise argparse.ArgumentTypeError(f"expected a positive number, got {text}")
        return value

    return parse


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m retrograd", description="retrograd's demo: train a small "
                                     "classifier on the handwritten digits shipped with the package.")
    parser.add_argument("command", nargs="?", default="demo", choices=["demo"], help="what to run (default: demo)")
    parser.add_argument("--model", choices=["mlp", "cnn"], default="mlp", help="network to train (default: mlp)")
    parser.add_argument("--epochs", type=_positive(int), default=None,
                        help="training epochs (default: 12 for mlp, 6 for cnn)")
    parser.add_argument("--batch-size", type=_positive(int), default=32, help="mini-batch size (default: 32)")
    parser.add_argument("--lr", type=_positive(float), default=None,
                        help="Adam learning rate (default: 0.003 for mlp, 0.01 for cnn)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the split, the weights and the batches")
    parser.add_argument("--out", type=Path, default=Path("demo_output"),
                        help="folder for loss_curve.png, graph.png/.dot and model.pt (default: ./demo_output)")
    args = parser.parse_args(argv)
    epochs = args.epochs or (12 if args.model == "mlp" else 6)
    lr = args.lr or (0.003 if args.model == "mlp" else 0.01)
    train(args.model, epochs, args.batch_size, lr, args.seed, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
