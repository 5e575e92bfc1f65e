"""Sine waves predicted by a two-cell LSTM trained with LBFGS, in the idioms of PyTorch's time_sequence_prediction
example, run unchanged under torch and under `python -m retrograd.run`: the data made with NumPy and kept with
torch.save / torch.load (whichever library wrote the file, the other reads it), a model in double precision
(`.double()`), LSTMCell stepped in a Python loop with `torch.cat`/`torch.stack`, `optim.LBFGS` with
`line_search_fn='strong_wolfe'` and a closure that prints the loss at every evaluation, prediction of the future
under `torch.no_grad()`. `WEIGHTS=path` shares the initial weights between the two runs."""

import os

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim


class Sequence(nn.Module):
    def __init__(self, hidden=12):
        super().__init__()
        self.hidden = hidden
        self.lstm1 = nn.LSTMCell(1, hidden)
        self.lstm2 = nn.LSTMCell(hidden, hidden)
        self.linear = nn.Linear(hidden, 1)

    def forward(self, input, future=0):
        outputs = []
        h_t = torch.zeros(input.size(0), self.hidden, dtype=torch.double)
        c_t = torch.zeros(input.size(0), self.hidden, dtype=torch.double)
        h_t2 = torch.zeros(input.size(0), self.hidden, dtype=torch.double)
        c_t2 = torch.zeros(input.size(0), self.hidden, dtype=torch.double)
        for input_t in input.split(1, dim=1):
            h_t, c_t = self.lstm1(input_t, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        for _ in range(future):  # predict the future: feed each output back in
            h_t, c_t = self.lstm1(output, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        return torch.cat(outputs, dim=1)


def make_data(path, T=20, L=40, N=8):
    np.random.seed(2)
    x = np.empty((N, L), "int64")
    x[:] = np.array(range(L)) + np.random.randint(-4 * T, 4 * T, N).reshape(N, 1)
    data = np.sin(x / 1.0 / T).astype("float64")
    torch.save(data, open(path, "wb"))


def main():
    if not os.path.exists("traindata.pt"):
        make_data("traindata.pt")
    data = torch.load("traindata.pt", weights_only=False)  # a NumPy array: not a weights-only file
    input = torch.from_numpy(data[3:, :-1])
    target = torch.from_numpy(data[3:, 1:])
    test_input = torch.from_numpy(data[:3, :-1])
    test_target = torch.from_numpy(data[:3, 1:])
    torch.manual_seed(0)
    seq = Sequence()
    seq.double()
    weights = os.environ.get("WEIGHTS")
    if weights and os.path.exists(weights):
        seq.load_state_dict({k: torch.from_numpy(v) for k, v in np.load(weights).items()})
    elif weights:
        np.savez(weights, **{k: v.numpy() for k, v in seq.state_dict().items()})
    criterion = nn.MSELoss()
    optimizer = optim.LBFGS(seq.parameters(), lr=0.8, max_iter=6, line_search_fn="strong_wolfe")
    for i in range(3):
        print("STEP: ", i)

        def closure():
            optimizer.zero_grad()
            out = seq(input)
            loss = criterion(out, target)
            print("loss: %.10f" % loss.item())  # noqa: UP031 - the example's own formatting
            loss.backward()
            return loss

        optimizer.step(closure)
        with torch.no_grad():
            future = 10
            pred = seq(test_input, future=future)
            loss = criterion(pred[:, :-future], test_target)
            print("test loss: %.10f" % loss.item())  # noqa: UP031
            y = pred.detach().numpy()
        print("prediction tail", " ".join(f"{v:.6f}" for v in y[0, -3:]))
    state = optimizer.state_dict()["state"][0]
    print("func evals", state["func_evals"], "n_iter", state["n_iter"])


if __name__ == "__main__":
    main()
