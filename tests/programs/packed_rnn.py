"""A classifier of variable-length token sequences in the idioms of public PyTorch code, run unchanged under torch
and under `python -m retrograd.run`: `pad_sequence`, `pack_padded_sequence(enforce_sorted=False)`, a bidirectional
LSTM on the PackedSequence, `pad_packed_sequence` and the final hidden states, a head under
`parametrizations.weight_norm`, Adam with an `SWALR` schedule, and an exponential moving average of the weights
(`AveragedModel` with `get_ema_multi_avg_fn`) evaluated at the end. The data come from NumPy's seeded generator.
Prints one line per batch; `WEIGHTS=path` shares the initial weights between the two runs."""

import os

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.parametrizations import weight_norm
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence
from torch.optim.swa_utils import SWALR, AveragedModel, get_ema_multi_avg_fn


class Classifier(nn.Module):
    def __init__(self, vocab=12, embed=8, hidden=16, classes=3):
        super().__init__()
        self.embed = nn.Embedding(vocab, embed, padding_idx=0)
        self.rnn = nn.LSTM(embed, hidden, batch_first=True, bidirectional=True)
        self.head = weight_norm(nn.Linear(2 * hidden, classes))

    def forward(self, tokens, lengths):
        packed = pack_padded_sequence(self.embed(tokens), lengths, batch_first=True, enforce_sorted=False)
        out, (h, _) = self.rnn(packed)
        padded, lens = pad_packed_sequence(out, batch_first=True)
        mean = padded.sum(1) / lens.unsqueeze(1).to(padded.dtype)
        return self.head(mean + torch.cat([h[0], h[1]], dim=1))


def batches(rng, count=6, size=5):
    data = []
    for _ in range(count):
        seqs = [rng.integers(1, 12, rng.integers(2, 9)) for _ in range(size)]
        tokens = pad_sequence([torch.tensor(s) for s in seqs], batch_first=True)
        lengths = torch.tensor([len(s) for s in seqs])
        labels = torch.tensor([int(s.sum()) % 3 for s in seqs])
        data.append((tokens, lengths, labels))
    return data


def main():
    model = Classifier()
    weights = os.environ.get("WEIGHTS")
    if weights and os.path.exists(weights):
        model.load_state_dict({k: torch.from_numpy(v) for k, v in np.load(weights).items()})
    elif weights:
        np.savez(weights, **{k: v.numpy() for k, v in model.state_dict().items()})
    data = batches(np.random.default_rng(0))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
    scheduler = SWALR(optimizer, swa_lr=0.005, anneal_epochs=2)
    ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.8))
    for epoch in range(3):
        for i, (tokens, lengths, labels) in enumerate(data):
            loss = F.cross_entropy(model(tokens, lengths), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            ema.update_parameters(model)
            print(f"epoch {epoch} batch {i} loss {loss.item():.6f}")
        scheduler.step()
        print(f"epoch {epoch} lr {scheduler.get_last_lr()[0]:.6f}")
    with torch.no_grad():
        total = sum(F.cross_entropy(ema(tokens, lengths), labels).item() for tokens, lengths, labels in data)
    print(f"ema loss {total / len(data):.6f}")


if __name__ == "__main__":
    main()
