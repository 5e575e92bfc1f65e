"""sin(x) fitted by a third-order polynomial, in the idioms of PyTorch's "Learning PyTorch with Examples" tutorial,
run unchanged under torch and under `python -m retrograd.run`: plain tensors with `requires_grad=True` and manual
updates under `torch.no_grad()`, a custom `torch.autograd.Function` (the Legendre polynomial P3 with
`ctx.save_for_backward`), `nn.Sequential` with `nn.Flatten(0, 1)` and `MSELoss(reduction='sum')` updated through
`model.parameters()`, the same model with `optim.RMSprop`, and a custom `nn.Module` with `nn.Parameter(torch.randn(()))`
and a `string()` method. `WEIGHTS=path` shares the initial weights between the two runs."""

import math
import os

import numpy as np
import torch


class LegendrePolynomial3(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return 0.5 * (5 * input ** 3 - 3 * input)

    @staticmethod
    def backward(ctx, grad_output):
        input, = ctx.saved_tensors
        return grad_output * 1.5 * (5 * input ** 2 - 1)


class Polynomial3(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Parameter(torch.randn(()))
        self.b = torch.nn.Parameter(torch.randn(()))
        self.c = torch.nn.Parameter(torch.randn(()))
        self.d = torch.nn.Parameter(torch.randn(()))

    def forward(self, x):
        return self.a + self.b * x + self.c * x ** 2 + self.d * x ** 3

    def string(self):
        return f"y = {self.a.item()} + {self.b.item()} x + {self.c.item()} x^2 + {self.d.item()} x^3"


def share_initial_weights(models):
    """Written by the first run, read by the second: {part}.{parameter name} in one file."""
    weights = os.environ.get("WEIGHTS")
    if weights and os.path.exists(weights):
        loaded = np.load(weights)
        for part, model in models.items():
            model.load_state_dict({k: torch.from_numpy(loaded[part + "." + k]) for k in model.state_dict()})
    elif weights:
        np.savez(weights, **{part + "." + k: v.numpy() for part, model in models.items()
                             for k, v in model.state_dict().items()})


def legendre(x, y, dtype):
    a = torch.full((), 0.0, dtype=dtype, requires_grad=True)
    b = torch.full((), -1.0, dtype=dtype, requires_grad=True)
    c = torch.full((), 0.0, dtype=dtype, requires_grad=True)
    d = torch.full((), 0.3, dtype=dtype, requires_grad=True)
    learning_rate = 5e-6
    for t in range(400):
        P3 = LegendrePolynomial3.apply
        y_pred = a + b * P3(c + d * x)
        loss = (y_pred - y).pow(2).sum()
        if t % 100 == 99:
            print(t, f"{loss.item():.6f}")
        loss.backward()
        with torch.no_grad():
            a -= learning_rate * a.grad
            b -= learning_rate * b.grad
            c -= learning_rate * c.grad
            d -= learning_rate * d.grad
            a.grad = None
            b.grad = None
            c.grad = None
            d.grad = None
    print(f"Result: y = {a.item():.6f} + {b.item():.6f} * P3({c.item():.6f} + {d.item():.6f} x)")


def sequential(x, y, model):
    p = torch.tensor([1, 2, 3])
    xx = x.unsqueeze(-1).pow(p)
    loss_fn = torch.nn.MSELoss(reduction="sum")
    learning_rate = 1e-6
    for t in range(400):
        y_pred = model(xx)
        loss = loss_fn(y_pred, y)
        if t % 100 == 99:
            print(t, f"{loss.item():.6f}")
        model.zero_grad()
        loss.backward()
        with torch.no_grad():
            for param in model.parameters():
                param -= learning_rate * param.grad
    linear_layer = model[0]
    print(f"Result: y = {linear_layer.bias.item():.6f} + {linear_layer.weight[:, 0].item():.6f} x + "
          f"{linear_layer.weight[:, 1].item():.6f} x^2 + {linear_layer.weight[:, 2].item():.6f} x^3")


def rmsprop(x, y, model):
    p = torch.tensor([1, 2, 3])
    xx = x.unsqueeze(-1).pow(p)
    loss_fn = torch.nn.MSELoss(reduction="sum")
    optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-3)
    for t in range(400):
        y_pred = model(xx)
        loss = loss_fn(y_pred, y)
        if t % 100 == 99:
            print(t, f"{loss.item():.6f}")
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    linear_layer = model[0]
    print(f"Result: y = {linear_layer.bias.item():.6f} + {linear_layer.weight[:, 0].item():.6f} x + "
          f"{linear_layer.weight[:, 1].item():.6f} x^2 + {linear_layer.weight[:, 2].item():.6f} x^3")


def module(x, y, model):
    criterion = torch.nn.MSELoss(reduction="sum")
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-6)
    for t in range(400):
        y_pred = model(x)
        loss = criterion(y_pred, y)
        if t % 100 == 99:
            print(t, f"{loss.item():.6f}")
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print("Result:", " ".join(f"{float(w):.6f}" if w[0].isdigit() or w[0] == "-" else w
                              for w in model.string().split()))


def main():
    dtype = torch.float
    device = torch.device("cpu")
    x = torch.linspace(-math.pi, math.pi, 2000, device=device, dtype=dtype)
    y = torch.sin(x)
    torch.manual_seed(0)
    models = {"sequential": torch.nn.Sequential(torch.nn.Linear(3, 1), torch.nn.Flatten(0, 1)),
              "rmsprop": torch.nn.Sequential(torch.nn.Linear(3, 1), torch.nn.Flatten(0, 1)),
              "module": Polynomial3()}
    share_initial_weights(models)
    legendre(x, y, dtype)
    sequential(x, y, models["sequential"])
    rmsprop(x, y, models["rmsprop"])
    module(x, y, models["module"])


if __name__ == "__main__":
    main()
