"""A classifier trained and evaluated in the idioms of PyTorch's quickstart and classification tutorials, run
unchanged under torch and under `python -m retrograd.run`: a TensorDataset split by `random_split` with fractions and
a seeded generator, DataLoaders with `shuffle=True`, `len(dataloader.dataset)`, an nn.Module with Flatten, Linear,
BatchNorm1d and ReLU, `model.train()`/`model.eval()`, SGD with momentum, nesterov and weight decay, a OneCycleLR
schedule stepped per batch, `zero_grad(set_to_none=True)`, `clip_grad_norm_`, evaluation under `torch.no_grad()`
with `argmax(1) == y` accuracy, the best model kept with `torch.save(model.state_dict())` and reloaded with
`torch.load(weights_only=True)`, `torch.max` predictions and a confusion matrix with `index_put_(accumulate=True)`.
`WEIGHTS=path` shares the initial weights between the two runs (tests/programs/_draws.py shares the shuffles)."""

import os

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset, random_split


class NeuralNetwork(nn.Module):
    def __init__(self, n_features, n_classes):
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(
            nn.Linear(n_features, 32), nn.BatchNorm1d(32), nn.ReLU(),
            nn.Linear(32, 32), nn.ReLU(),
            nn.Linear(32, n_classes),
        )

    def forward(self, x):
        x = self.flatten(x)
        logits = self.linear_relu_stack(x)
        return logits


def train(dataloader, model, loss_fn, optimizer, scheduler):
    size = len(dataloader.dataset)
    model.train()
    for batch, (X, y) in enumerate(dataloader):
        pred = model(X)
        loss = loss_fn(pred, y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=2.0)
        optimizer.step()
        scheduler.step()
        if batch % 3 == 0:
            loss, current = loss.item(), (batch + 1) * len(X)
            print(f"loss: {loss:>7f}  [{current:>5d}/{size:>5d}] lr {scheduler.get_last_lr()[0]:.6f}")


def test(dataloader, model, loss_fn):
    size = len(dataloader.dataset)
    num_batches = len(dataloader)
    model.eval()
    test_loss, correct = 0, 0
    with torch.no_grad():
        for X, y in dataloader:
            pred = model(X)
            test_loss += loss_fn(pred, y).item()
            correct += (pred.argmax(1) == y).type(torch.float).sum().item()
    test_loss /= num_batches
    correct /= size
    print(f"Test Error: \n Accuracy: {(100 * correct):>0.1f}%, Avg loss: {test_loss:>8f} \n")
    return correct


def make_blobs(n=240, n_classes=3, n_features=2, seed=0):
    """Three Gaussian blobs on 2x2 "images" (NumPy's generator: the same data under both libraries)."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(0.0, 2.0, (n_classes, n_features * 2))
    labels = rng.integers(0, n_classes, n)
    points = centers[labels] + rng.normal(0.0, 1.2, (n, n_features * 2))
    return torch.from_numpy(points).float().reshape(n, n_features, 2), torch.from_numpy(labels)


def main():
    X, y = make_blobs()
    dataset = TensorDataset(X, y)
    training_data, test_data = random_split(dataset, [0.75, 0.25], generator=torch.Generator().manual_seed(42))
    batch_size = 16
    train_dataloader = DataLoader(training_data, batch_size=batch_size, shuffle=True)
    test_dataloader = DataLoader(test_data, batch_size=batch_size)
    for X, y in test_dataloader:
        print(f"Shape of X [N, C, H, W]: {X.shape}")
        print(f"Shape of y: {y.shape} {y.dtype}")
        break
    device = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"
    print(f"Using {device} device")
    model = NeuralNetwork(4, 3).to(device)
    weights = os.environ.get("WEIGHTS")
    if weights and os.path.exists(weights):
        model.load_state_dict({k: torch.from_numpy(v) for k, v in np.load(weights).items()})
    elif weights:
        np.savez(weights, **{k: v.numpy() for k, v in model.state_dict().items()})
    print(model)
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9, nesterov=True, weight_decay=1e-4)
    epochs = 3
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=0.1, epochs=epochs,
                                                    steps_per_epoch=len(train_dataloader))
    best = -1.0
    for t in range(epochs):
        print(f"Epoch {t + 1}\n-------------------------------")
        train(train_dataloader, model, loss_fn, optimizer, scheduler)
        accuracy = test(test_dataloader, model, loss_fn)
        if accuracy > best:
            best = accuracy
            torch.save(model.state_dict(), "model.pth")
            print("Saved PyTorch Model State to model.pth")
    print("Done!")
    model = NeuralNetwork(4, 3).to(device)
    model.load_state_dict(torch.load("model.pth", weights_only=True))
    model.eval()
    confusion = torch.zeros(3, 3, dtype=torch.long)
    with torch.no_grad():
        for X, y in test_dataloader:
            _, predicted = torch.max(model(X), 1)
            confusion.index_put_((y, predicted), torch.ones_like(y), accumulate=True)
    print("confusion matrix", confusion.tolist())
    print(f"best accuracy {100 * best:.1f}%")


if __name__ == "__main__":
    main()
