"""A variational autoencoder in the idioms of PyTorch's examples/vae, run unchanged under torch and under
`python -m retrograd.run`: argparse flags with `args.cuda = not args.no_cuda and torch.cuda.is_available()`,
`torch.backends.mps.is_available()`, `torch.device(...)`, DataLoader kwargs that depend on the device, the
reparameterisation trick with `torch.randn_like`, `F.binary_cross_entropy(reduction='sum')` plus the KL term,
`'{:.6f}'.format` logging with `len(train_loader.dataset)`, evaluation and sampling under `torch.no_grad()`,
`torch.cat` of inputs and reconstructions. `WEIGHTS=path` shares the initial weights between the two runs
(tests/programs/_draws.py shares the shuffles and the noise)."""

# ruff: noqa: UP032 - the example's own str.format logging
import argparse
import os

import numpy as np
import torch
import torch.utils.data
from torch import nn, optim
from torch.nn import functional as F

parser = argparse.ArgumentParser(description="VAE Example")
parser.add_argument("--batch-size", type=int, default=32, metavar="N")
parser.add_argument("--epochs", type=int, default=2, metavar="N")
parser.add_argument("--no-cuda", action="store_true", default=False)
parser.add_argument("--no-mps", action="store_true", default=False)
parser.add_argument("--seed", type=int, default=1, metavar="S")
parser.add_argument("--log-interval", type=int, default=2, metavar="N")
args = parser.parse_args()
args.cuda = not args.no_cuda and torch.cuda.is_available()
use_mps = not args.no_mps and torch.backends.mps.is_available()

torch.manual_seed(args.seed)

if args.cuda:
    device = torch.device("cuda")
elif use_mps:
    device = torch.device("mps")
else:
    device = torch.device("cpu")

kwargs = {"num_workers": 1, "pin_memory": True} if args.cuda else {}


def make_images(n, seed):
    """8x8 "images" in [0, 1]: a bright bar at a random row or column (NumPy's generator, the same in both runs)."""
    rng = np.random.default_rng(seed)
    images = rng.uniform(0.0, 0.2, (n, 1, 8, 8))
    for image, where, horizontal in zip(images, rng.integers(0, 8, n), rng.integers(0, 2, n)):
        if horizontal:
            image[0, where, :] = 0.9
        else:
            image[0, :, where] = 0.9
    return torch.from_numpy(images).float()


train_loader = torch.utils.data.DataLoader(
    torch.utils.data.TensorDataset(make_images(128, 0), torch.zeros(128)),
    batch_size=args.batch_size, shuffle=True, **kwargs)
test_loader = torch.utils.data.DataLoader(
    torch.utils.data.TensorDataset(make_images(64, 1), torch.zeros(64)),
    batch_size=args.batch_size, shuffle=False, **kwargs)


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 32)
        self.fc21 = nn.Linear(32, 4)
        self.fc22 = nn.Linear(32, 4)
        self.fc3 = nn.Linear(4, 32)
        self.fc4 = nn.Linear(32, 64)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, 64))
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


model = VAE().to(device)
weights = os.environ.get("WEIGHTS")
if weights and os.path.exists(weights):
    model.load_state_dict({k: torch.from_numpy(v) for k, v in np.load(weights).items()})
elif weights:
    np.savez(weights, **{k: v.numpy() for k, v in model.state_dict().items()})
optimizer = optim.Adam(model.parameters(), lr=1e-2)


def loss_function(recon_x, x, mu, logvar):
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, 64), reduction="sum")
    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return BCE + KLD


def train(epoch):
    model.train()
    train_loss = 0
    for batch_idx, (data, _) in enumerate(train_loader):
        data = data.to(device)
        optimizer.zero_grad()
        recon_batch, mu, logvar = model(data)
        loss = loss_function(recon_batch, data, mu, logvar)
        loss.backward()
        train_loss += loss.item()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            print("Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}".format(
                epoch, batch_idx * len(data), len(train_loader.dataset),
                100. * batch_idx / len(train_loader), loss.item() / len(data)))
    print("====> Epoch: {} Average loss: {:.4f}".format(epoch, train_loss / len(train_loader.dataset)))


def test(epoch):
    model.eval()
    test_loss = 0
    with torch.no_grad():
        for i, (data, _) in enumerate(test_loader):
            data = data.to(device)
            recon_batch, mu, logvar = model(data)
            test_loss += loss_function(recon_batch, data, mu, logvar).item()
            if i == 0:
                n = min(data.size(0), 8)
                comparison = torch.cat([data[:n], recon_batch.view(args.batch_size, 1, 8, 8)[:n]])
                print("comparison", tuple(comparison.shape), "mean {:.6f}".format(comparison.mean().item()))
    test_loss /= len(test_loader.dataset)
    print("====> Test set loss: {:.4f}".format(test_loss))


if __name__ == "__main__":
    for epoch in range(1, args.epochs + 1):
        train(epoch)
        test(epoch)
        with torch.no_grad():
            sample = torch.randn(16, 4).to(device)
            sample = model.decode(sample).cpu()
            print("sample", tuple(sample.view(16, 1, 8, 8).shape), "mean {:.6f}".format(sample.mean().item()))
