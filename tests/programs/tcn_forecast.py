"""One-step and multi-step forecasting of a noisy multi-sine series with a Temporal Convolutional Network and a GRU,
in the idioms of locuslab's TCN repository, the public time-series forecasting tutorials and the early-stopping
recipes, run unchanged under torch and under `python -m retrograd.run`: the series from NumPy's seeded generator,
cut into (window, next value) pairs by `unfold(0, WINDOW + 1, 1)` and split by slicing into train / validation /
test. The TCN: `Chomp1d` (`x[:, :, :-self.chomp_size].contiguous()`) after dilated causal
`nn.Conv1d(padding=(k-1)*dilation, dilation=d)` wrapped in `torch.nn.utils.parametrizations.weight_norm` (the
first block's convolutions in the deprecated `torch.nn.utils.weight_norm`), `weight.data.normal_(0, 0.01)` init, a
residual 1x1 `downsample` conv where the channels change, `nn.Dropout`, and a Linear head on the last time step.
The GRU: `nn.GRU(batch_first=True)` with a Linear head on `out[:, -1, :]`. Both trained by MSE and Adam under
`ReduceLROnPlateau(mode="min", factor=0.5, patience=1)` stepped with the validation loss (the rate printed from
`optimizer.param_groups[0]["lr"]`), with early stopping that keeps `copy.deepcopy(model.state_dict())` and loads
the best state back. The TCN is checkpointed halfway through an `io.BytesIO` (`torch.save` of model, optimizer and
epoch, `torch.load(weights_only=True)`) into a fresh model and optimizer that resume. Then autoregressive
multi-step forecasting under `torch.no_grad()` by `torch.cat([window[:, 1:], pred.unsqueeze(1)], dim=1)`, with MAE
and RMSE printed. `WEIGHTS=path` shares the initial weights (tests/programs/_draws.py shares the dropout and
shuffle draws)."""

import copy
import io

import numpy as np
import torch
import torch.nn as nn
from _weights import share_initial_weights
from torch.nn.utils import parametrizations

torch.manual_seed(0)
WINDOW, HORIZON, BATCH, EPOCHS, PATIENCE = 24, 8, 32, 8, 3

rng = np.random.default_rng(0)
t = np.arange(400, dtype=np.float64)
series = (np.sin(2 * np.pi * t / 25) + 0.5 * np.sin(2 * np.pi * t / 9 + 1.0) + 0.3 * np.sin(2 * np.pi * t / 50)
          + rng.normal(0.0, 0.1, t.shape))
series = torch.tensor(series, dtype=torch.float32)
pairs = series.unfold(0, WINDOW + 1, 1)  # (N, WINDOW + 1)
x_all, y_all = pairs[:, :-1], pairs[:, -1]
n_train, n_val = 240, 60
x_train, y_train = x_all[:n_train], y_all[:n_train]
x_val, y_val = x_all[n_train:n_train + n_val], y_all[n_train:n_train + n_val]
test_start = n_train + n_val
print(f"pairs {tuple(pairs.shape)} train {len(x_train)} val {len(x_val)} series mean {series.mean().item():.6f}")


class Chomp1d(nn.Module):
    def __init__(self, chomp_size):
        super().__init__()
        self.chomp_size = chomp_size

    def forward(self, x):
        return x[:, :, :-self.chomp_size].contiguous()


class TemporalBlock(nn.Module):
    def __init__(self, n_inputs, n_outputs, kernel_size, dilation, dropout, legacy_norm=False):
        super().__init__()
        padding = (kernel_size - 1) * dilation
        norm = nn.utils.weight_norm if legacy_norm else parametrizations.weight_norm
        self.conv1 = nn.Conv1d(n_inputs, n_outputs, kernel_size, padding=padding, dilation=dilation)
        self.conv2 = nn.Conv1d(n_outputs, n_outputs, kernel_size, padding=padding, dilation=dilation)
        self.conv1.weight.data.normal_(0, 0.01)
        self.conv2.weight.data.normal_(0, 0.01)
        self.conv1, self.conv2 = norm(self.conv1), norm(self.conv2)
        self.net = nn.Sequential(self.conv1, Chomp1d(padding), nn.ReLU(), nn.Dropout(dropout),
                                 self.conv2, Chomp1d(padding), nn.ReLU(), nn.Dropout(dropout))
        self.downsample = nn.Conv1d(n_inputs, n_outputs, 1) if n_inputs != n_outputs else None
        if self.downsample is not None:
            self.downsample.weight.data.normal_(0, 0.01)
        self.relu = nn.ReLU()

    def forward(self, x):
        out = self.net(x)
        res = x if self.downsample is None else self.downsample(x)
        return self.relu(out + res)


class TCN(nn.Module):
    def __init__(self, channels=(16, 16, 16), kernel_size=3, dropout=0.1):
        super().__init__()
        layers, n_in = [], 1
        for i, n_out in enumerate(channels):
            layers.append(TemporalBlock(n_in, n_out, kernel_size, 2 ** i, dropout, legacy_norm=(i == 0)))
            n_in = n_out
        self.network = nn.Sequential(*layers)
        self.linear = nn.Linear(n_in, 1)
        self.linear.weight.data.normal_(0, 0.01)

    def forward(self, x):  # x: (B, WINDOW)
        y = self.network(x.unsqueeze(1))
        return self.linear(y[:, :, -1]).squeeze(-1)


class GRUForecaster(nn.Module):
    def __init__(self, hidden=24):
        super().__init__()
        self.gru = nn.GRU(1, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x):
        out, _ = self.gru(x.unsqueeze(-1))
        return self.head(out[:, -1, :]).squeeze(-1)


tcn, gru = TCN(), GRUForecaster()
share_initial_weights({"tcn": tcn, "gru": gru})
criterion = nn.MSELoss()


def evaluate(model):
    model.eval()
    with torch.no_grad():
        loss = criterion(model(x_val), y_val).item()
    model.train()
    return loss


def train_epoch(model, optimizer):
    perm = torch.randperm(len(x_train))
    total = 0.0
    for i in range(0, len(x_train), BATCH):
        idx = perm[i:i + BATCH]
        optimizer.zero_grad()
        loss = criterion(model(x_train[idx]), y_train[idx])
        loss.backward()
        optimizer.step()
        total += loss.item() * len(idx)
    return total / len(x_train)


def fit(name, model, lr, resume_at=None):
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode="min", factor=0.5, patience=1)
    best_loss, best_state, bad_epochs = float("inf"), None, 0
    for epoch in range(EPOCHS):
        train_loss = train_epoch(model, optimizer)
        val_loss = evaluate(model)
        scheduler.step(val_loss)
        print(f"{name} epoch {epoch} train {train_loss:.6f} val {val_loss:.6f} "
              f"lr {optimizer.param_groups[0]['lr']:.6f}")
        if val_loss < best_loss:
            best_loss, best_state, bad_epochs = val_loss, copy.deepcopy(model.state_dict()), 0
        else:
            bad_epochs += 1
            if bad_epochs >= PATIENCE:
                print(f"{name} early stop at epoch {epoch}")
                break
        if epoch == resume_at:
            buf = io.BytesIO()
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch}, buf)
            buf.seek(0)
            checkpoint = torch.load(buf, weights_only=True)
            model = type(model)()
            model.load_state_dict(checkpoint["model"])
            lr_now = optimizer.param_groups[0]["lr"]
            optimizer = torch.optim.Adam(model.parameters(), lr=lr_now)
            optimizer.load_state_dict(checkpoint["optimizer"])
            scheduler.optimizer = optimizer
            print(f"{name} resumed from epoch {checkpoint['epoch']} val {evaluate(model):.6f} "
                  f"steps {optimizer.state_dict()['state'][0]['step'].item():.1f}")
    model.load_state_dict(best_state)
    print(f"{name} best val {best_loss:.6f} reloaded val {evaluate(model):.6f}")
    return model


def forecast(model, window, steps):
    model.eval()
    preds = []
    with torch.no_grad():
        for _ in range(steps):
            pred = model(window)
            preds.append(pred)
            window = torch.cat([window[:, 1:], pred.unsqueeze(1)], dim=1)
    return torch.stack(preds, dim=1)


tcn = fit("tcn", tcn, 3e-3, resume_at=3)
gru = fit("gru", gru, 1e-2)
starts = torch.arange(test_start, len(series) - WINDOW - HORIZON, 10)
windows = torch.stack([series[s:s + WINDOW] for s in starts.tolist()])
targets = torch.stack([series[s + WINDOW:s + WINDOW + HORIZON] for s in starts.tolist()])
for name, model in (("tcn", tcn), ("gru", gru)):
    preds = forecast(model, windows, HORIZON)
    err = preds - targets
    mae, rmse = err.abs().mean().item(), err.pow(2).mean().sqrt().item()
    per_step = ", ".join(f"{v:.4f}" for v in err.abs().mean(dim=0).tolist())
    print(f"{name} forecast MAE {mae:.6f} RMSE {rmse:.6f} per-step MAE [{per_step}]")
