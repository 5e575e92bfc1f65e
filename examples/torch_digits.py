"""A plain PyTorch training script: it never mentions retrograd.

    python examples/torch_digits.py                    # with PyTorch, if installed
    python -m retrograd.run examples/torch_digits.py   # the same file on retrograd, unchanged

It classifies the UCI 8x8 handwritten digits shipped in retrograd/datasets (read with NumPy) with
a small CNN, as a PyTorch tutorial would.
"""

import gzip
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

DATA = Path(__file__).resolve().parent.parent / "retrograd" / "datasets" / "digits.csv.gz"


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 8, kernel_size=3, padding=1)
        self.fc1 = nn.Linear(8 * 4 * 4, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv(x)), 2)
        x = torch.flatten(x, 1)
        return self.fc2(F.relu(self.fc1(x)))


def main():
    with gzip.open(DATA, "rt") as f:
        table = np.loadtxt(f, delimiter=",", dtype=np.float32)
    images = torch.from_numpy(table[:, :64].reshape(-1, 1, 8, 8) / 16.0)
    labels = torch.from_numpy(table[:, 64].astype(np.int64))
    torch.manual_seed(0)
    order = torch.randperm(len(labels))
    train, test = order[:1400], order[1400:]
    loader = DataLoader(TensorDataset(images[train], labels[train]), batch_size=32, shuffle=True)
    model = Net()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    for epoch in range(4):
        model.train()
        for x, y in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            accuracy = (model(images[test]).argmax(1) == labels[test]).float().mean().item()
        print(f"epoch {epoch + 1}: last batch loss {loss.item():.4f}, test accuracy {accuracy:.1%}")


if __name__ == "__main__":
    main()
