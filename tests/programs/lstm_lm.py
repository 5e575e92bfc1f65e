"""A word-level LSTM language model in the idioms of PyTorch's word_language_model example, run unchanged under
torch and under `python -m retrograd.run`: a corpus dictionary, batchify, get_batch with bptt, an RNNModel
(embedding, 2-layer LSTM, decoder with tied weights, uniform init), hidden state detached between batches,
gradient clipping, a manual SGD update through p.data, evaluation under no_grad, exp(loss) perplexity.
Prints one line per batch; `WEIGHTS=path` shares the initial weights between the two runs."""

import math
import os

import numpy as np
import torch
import torch.nn as nn


class Dictionary:
    def __init__(self):
        self.word2idx, self.idx2word = {}, []

    def add_word(self, word):
        if word not in self.word2idx:
            self.idx2word.append(word)
            self.word2idx[word] = len(self.idx2word) - 1
        return self.word2idx[word]


class RNNModel(nn.Module):
    def __init__(self, ntoken, ninp, nhid, nlayers, dropout=0.0, tie_weights=True):
        super().__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        if tie_weights:
            if nhid != ninp:
                raise ValueError("When using the tied flag, nhid must be equal to emsize")
            self.decoder.weight = self.encoder.weight
        self.init_weights()
        self.nhid, self.nlayers = nhid, nlayers

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output).view(-1, self.ntoken)
        return nn.functional.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return (weight.new_zeros(self.nlayers, bsz, self.nhid), weight.new_zeros(self.nlayers, bsz, self.nhid))


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous()


def get_batch(source, i, bptt):
    seq_len = min(bptt, len(source) - 1 - i)
    return source[i:i + seq_len], source[i + 1:i + 1 + seq_len].view(-1)


def repackage_hidden(h):
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def main():
    torch.manual_seed(1111)
    words = ("the quick brown fox jumps over the lazy dog and the dog sleeps while the fox runs away into the "
             "forest where the trees are tall and the night is dark <eos> ").split() * 10
    corpus = Dictionary()
    ids = torch.tensor([corpus.add_word(w) for w in words], dtype=torch.int64)
    train_data, val_data = batchify(ids[:240], 4), batchify(ids[240:], 2)
    model = RNNModel(len(corpus.idx2word), 24, 24, 2)
    weights = os.environ.get("WEIGHTS")
    if weights and os.path.exists(weights):
        model.load_state_dict({k: torch.from_numpy(v) for k, v in np.load(weights).items()})
    elif weights:
        np.savez(weights, **{k: v.numpy() for k, v in model.state_dict().items()})
    criterion = nn.NLLLoss()
    lr, bptt, clip = 2.0, 7, 0.25
    for epoch in range(2):
        model.train()
        hidden = model.init_hidden(4)
        for batch, i in enumerate(range(0, train_data.size(0) - 1, bptt)):
            data, targets = get_batch(train_data, i, bptt)
            model.zero_grad()
            hidden = repackage_hidden(hidden)
            output, hidden = model(data, hidden)
            loss = criterion(output, targets)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-lr)
            print(f"epoch {epoch} batch {batch} loss {loss.item():.6f}")
        model.eval()
        total_loss, hidden = 0.0, model.init_hidden(2)
        with torch.no_grad():
            for i in range(0, val_data.size(0) - 1, bptt):
                data, targets = get_batch(val_data, i, bptt)
                output, hidden = model(data, hidden)
                hidden = repackage_hidden(hidden)
                total_loss += len(data) * criterion(output, targets).item()
        val_loss = total_loss / (len(val_data) - 1)
        print(f"epoch {epoch} valid loss {val_loss:.6f} ppl {math.exp(val_loss):.4f}")


if __name__ == "__main__":
    main()
