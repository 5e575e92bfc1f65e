"""A physics-informed network for Burgers' equation in the idioms of the public PyTorch ports of Raissi's PINNs, run
unchanged under torch and under `python -m retrograd.run`: a `DNN` built from an `OrderedDict` of `Linear` and
`Tanh` layers, collocation points made with `torch.tensor(..., requires_grad=True).float()`, the derivatives u_t,
u_x and u_xx of the output with respect to the inputs by `torch.autograd.grad(u, x, grad_outputs=
torch.ones_like(u), retain_graph=True, create_graph=True)[0]`, the residual u_t + u u_x - nu u_xx, a loss that adds
the boundary fit, Adam first and then `LBFGS(..., line_search_fn="strong_wolfe")` driven by a closure that counts
its calls. Prints the losses as it goes; `WEIGHTS=path` shares the initial weights between the two runs."""

# ruff: noqa: UP031 - the original's own %-format logging
from collections import OrderedDict

import numpy as np
import torch
from _weights import share_initial_weights

np.random.seed(1234)
torch.manual_seed(1234)
device = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")


class DNN(torch.nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.depth = len(layers) - 1
        self.activation = torch.nn.Tanh
        layer_list = []
        for i in range(self.depth - 1):
            layer_list.append(("layer_%d" % i, torch.nn.Linear(layers[i], layers[i + 1])))
            layer_list.append(("activation_%d" % i, self.activation()))
        layer_list.append(("layer_%d" % (self.depth - 1), torch.nn.Linear(layers[-2], layers[-1])))
        self.layers = torch.nn.Sequential(OrderedDict(layer_list))

    def forward(self, x):
        return self.layers(x)


class PhysicsInformedNN:
    def __init__(self, X_u, u, X_f, layers, lb, ub, nu):
        self.lb = torch.tensor(lb).float().to(device)
        self.ub = torch.tensor(ub).float().to(device)
        self.x_u = torch.tensor(X_u[:, 0:1], requires_grad=True).float().to(device)
        self.t_u = torch.tensor(X_u[:, 1:2], requires_grad=True).float().to(device)
        self.x_f = torch.tensor(X_f[:, 0:1], requires_grad=True).float().to(device)
        self.t_f = torch.tensor(X_f[:, 1:2], requires_grad=True).float().to(device)
        self.u = torch.tensor(u).float().to(device)
        self.nu = nu
        self.dnn = DNN(layers).to(device)
        share_initial_weights({"dnn": self.dnn})
        self.optimizer = torch.optim.LBFGS(self.dnn.parameters(), lr=1.0, max_iter=6, max_eval=8,
                                           history_size=50, tolerance_grad=1e-5,
                                           tolerance_change=1.0 * np.finfo(float).eps, line_search_fn="strong_wolfe")
        self.optimizer_Adam = torch.optim.Adam(self.dnn.parameters(), lr=1e-3)
        self.iter = 0

    def net_u(self, x, t):
        X = torch.cat([x, t], dim=1)
        H = 2.0 * (X - self.lb) / (self.ub - self.lb) - 1.0
        return self.dnn(H)

    def net_f(self, x, t):
        u = self.net_u(x, t)
        u_t = torch.autograd.grad(u, t, grad_outputs=torch.ones_like(u), retain_graph=True, create_graph=True)[0]
        u_x = torch.autograd.grad(u, x, grad_outputs=torch.ones_like(u), retain_graph=True, create_graph=True)[0]
        u_xx = torch.autograd.grad(u_x, x, grad_outputs=torch.ones_like(u_x), retain_graph=True,
                                   create_graph=True)[0]
        return u_t + u * u_x - self.nu * u_xx

    def loss_func(self):
        u_pred = self.net_u(self.x_u, self.t_u)
        f_pred = self.net_f(self.x_f, self.t_f)
        loss_u = torch.mean((self.u - u_pred) ** 2)
        loss_f = torch.mean(f_pred ** 2)
        return loss_u + loss_f, loss_u, loss_f

    def closure(self):
        self.optimizer.zero_grad()
        loss, loss_u, loss_f = self.loss_func()
        loss.backward()
        self.iter += 1
        print("Iter %d, Loss: %.5e, Loss_u: %.5e, Loss_f: %.5e" % (self.iter, loss.item(), loss_u.item(),
                                                                    loss_f.item()))
        return loss

    def train(self, nIter):
        self.dnn.train()
        for epoch in range(nIter):
            self.optimizer_Adam.zero_grad()
            loss, loss_u, loss_f = self.loss_func()
            loss.backward()
            self.optimizer_Adam.step()
            print("Adam It: %d, Loss: %.5e, Loss_u: %.5e, Loss_f: %.5e, grad_fn %s"
                  % (epoch, loss.item(), loss_u.item(), loss_f.item(), type(loss.grad_fn).__name__))
        self.optimizer.step(self.closure)

    def predict(self, X):
        x = torch.tensor(X[:, 0:1], requires_grad=True).float().to(device)
        t = torch.tensor(X[:, 1:2], requires_grad=True).float().to(device)
        self.dnn.eval()
        u = self.net_u(x, t)
        f = self.net_f(x, t)
        return u.detach().cpu().numpy(), f.detach().cpu().numpy()


nu = 0.01 / np.pi
lb, ub = np.array([-1.0, 0.0]), np.array([1.0, 1.0])
layers = [2, 20, 20, 20, 1]
x_edge = np.linspace(-1, 1, 20)[:, None]
t_edge = np.linspace(0, 1, 10)[:, None]
X_u = np.vstack([np.hstack([x_edge, np.zeros_like(x_edge)]),  # u(x, 0) = -sin(pi x)
                 np.hstack([-np.ones_like(t_edge), t_edge]), np.hstack([np.ones_like(t_edge), t_edge])])
u_train = np.vstack([-np.sin(np.pi * x_edge), np.zeros_like(t_edge), np.zeros_like(t_edge)])
X_f = lb + (ub - lb) * np.random.rand(48, 2)  # collocation points (Latin hypercube in the original)
model = PhysicsInformedNN(X_u, u_train, X_f, layers, lb, ub, nu)
model.train(5)
u_pred, f_pred = model.predict(np.array([[0.5, 0.5], [-0.5, 0.25], [0.0, 0.75]]))
print("u_pred", " ".join("%.5f" % v for v in u_pred.ravel()), "max |f| %.5f" % np.abs(f_pred).max())
