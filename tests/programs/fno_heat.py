"""A 1-d Fourier neural operator in the idioms of the public FNO code (Li et al., fourier_1d.py), run unchanged under
torch and under `python -m retrograd.run`: `SpectralConv1d` whose complex weights are `nn.Parameter(self.scale *
torch.rand(..., dtype=torch.cfloat))`, `torch.fft.rfft`, a complex `torch.einsum("bix,iox->box", ...)` on the lowest
modes written into `torch.zeros(..., dtype=torch.cfloat)`, `torch.fft.irfft(out_ft, n=x.size(-1))`, the grid
appended as a channel by `torch.linspace(...).reshape(...).repeat(...)`, `nn.Conv1d` skip paths, `F.gelu`, `permute`,
a relative L2 loss (`torch.norm(x - y, p, 1) / torch.norm(y, p, 1)`), Adam with weight decay on real and complex
parameters, `torch.optim.lr_scheduler.StepLR`, and `torch.utils.data.DataLoader` over a `TensorDataset` with
shuffling. It learns the heat equation's solution map. Prints the loss each epoch; `WEIGHTS=path` shares the
initial weights (tests/programs/_draws.py shares the shuffles)."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from _weights import share_initial_weights

torch.manual_seed(0)
np.random.seed(0)


class SpectralConv1d(nn.Module):
    def __init__(self, in_channels, out_channels, modes1):
        super().__init__()
        self.in_channels, self.out_channels, self.modes1 = in_channels, out_channels, modes1
        self.scale = 1 / (in_channels * out_channels)
        self.weights1 = nn.Parameter(self.scale * torch.rand(in_channels, out_channels, self.modes1,
                                                             dtype=torch.cfloat))

    def compl_mul1d(self, input, weights):
        return torch.einsum("bix,iox->box", input, weights)

    def forward(self, x):
        batchsize = x.shape[0]
        x_ft = torch.fft.rfft(x)
        out_ft = torch.zeros(batchsize, self.out_channels, x.size(-1) // 2 + 1, device=x.device, dtype=torch.cfloat)
        out_ft[:, :, :self.modes1] = self.compl_mul1d(x_ft[:, :, :self.modes1], self.weights1)
        return torch.fft.irfft(out_ft, n=x.size(-1))


class FNO1d(nn.Module):
    def __init__(self, modes, width):
        super().__init__()
        self.modes1, self.width = modes, width
        self.fc0 = nn.Linear(2, self.width)  # input channels: the initial condition and x
        self.conv0 = SpectralConv1d(self.width, self.width, self.modes1)
        self.conv1 = SpectralConv1d(self.width, self.width, self.modes1)
        self.w0 = nn.Conv1d(self.width, self.width, 1)
        self.w1 = nn.Conv1d(self.width, self.width, 1)
        self.fc1 = nn.Linear(self.width, 32)
        self.fc2 = nn.Linear(32, 1)

    def forward(self, x):
        grid = self.get_grid(x.shape, x.device)
        x = torch.cat((x, grid), dim=-1)
        x = self.fc0(x)
        x = x.permute(0, 2, 1)
        x = F.gelu(self.conv0(x) + self.w0(x))
        x = self.conv1(x) + self.w1(x)
        x = x.permute(0, 2, 1)
        x = F.gelu(self.fc1(x))
        return self.fc2(x)

    def get_grid(self, shape, device):
        batchsize, size_x = shape[0], shape[1]
        gridx = torch.tensor(np.linspace(0, 1, size_x), dtype=torch.float)
        gridx = gridx.reshape(1, size_x, 1).repeat([batchsize, 1, 1])
        return gridx.to(device)


class LpLoss:
    """Relative Lp error, averaged over the batch."""

    def __init__(self, p=2, size_average=True):
        self.p, self.size_average = p, size_average

    def rel(self, x, y):
        num_examples = x.size()[0]
        diff_norms = torch.norm(x.reshape(num_examples, -1) - y.reshape(num_examples, -1), self.p, 1)
        y_norms = torch.norm(y.reshape(num_examples, -1), self.p, 1)
        return torch.mean(diff_norms / y_norms) if self.size_average else torch.sum(diff_norms / y_norms)

    def __call__(self, x, y):
        return self.rel(x, y)


def heat_data(n, s, t=0.01):
    """Random smooth initial conditions on [0, 1) and the periodic heat equation's solution at time t."""
    k = np.fft.rfftfreq(s, d=1.0 / s)
    coefficients = (np.random.randn(n, k.size) + 1j * np.random.randn(n, k.size)) / (1 + k) ** 2
    u0 = np.fft.irfft(coefficients, n=s)
    ut = np.fft.irfft(coefficients * np.exp(-(2 * np.pi * k) ** 2 * t), n=s)
    return torch.tensor(u0, dtype=torch.float).unsqueeze(-1), torch.tensor(ut, dtype=torch.float).unsqueeze(-1)


ntrain, ntest, s, batch_size = 24, 8, 32, 8
x_train, y_train = heat_data(ntrain, s)
x_test, y_test = heat_data(ntest, s)
train_loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x_train, y_train), batch_size=batch_size,
                                           shuffle=True)
test_loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x_test, y_test), batch_size=batch_size,
                                          shuffle=False)

model = FNO1d(modes=6, width=16)
share_initial_weights({"model": model})
print("parameters", sum(p.numel() for p in model.parameters()),
      "complex", [n for n, p in model.named_parameters() if p.is_complex()])
optimizer = torch.optim.Adam(model.parameters(), lr=0.005, weight_decay=1e-4)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
myloss = LpLoss(size_average=False)
for ep in range(4):
    model.train()
    train_mse, train_l2 = 0.0, 0.0
    for x, y in train_loader:
        optimizer.zero_grad()
        out = model(x)
        mse = F.mse_loss(out.view(batch_size, -1), y.view(batch_size, -1), reduction="mean")
        l2 = myloss(out.view(batch_size, -1), y.view(batch_size, -1))
        l2.backward()
        optimizer.step()
        train_mse += mse.item()
        train_l2 += l2.item()
    scheduler.step()
    model.eval()
    test_l2 = 0.0
    with torch.no_grad():
        for x, y in test_loader:
            out = model(x)
            test_l2 += myloss(out.view(batch_size, -1), y.view(batch_size, -1)).item()
    print(f"epoch {ep} mse {train_mse / len(train_loader):.6f} train l2 {train_l2 / ntrain:.6f} "
          f"test l2 {test_l2 / ntest:.6f} lr {scheduler.get_last_lr()[0]:.6f}")
spectral = model.conv0.weights1
print(f"spectral weights {spectral.dtype} |w| {spectral.abs().sum().item():.6f} "
      f"adam state {optimizer.state[spectral]['exp_avg_sq'].dtype}")
