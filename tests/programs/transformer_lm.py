"""A word-level Transformer language model in the idioms of PyTorch's examples/word_language_model, run unchanged
under torch and under `python -m retrograd.run`: a `Dictionary`/`Corpus` that tokenizes text into a LongTensor,
`batchify` with `narrow` and `.t().contiguous()`, `get_batch` slicing `bptt` rows, a `PositionalEncoding` module
whose sine/cosine table is a `register_buffer`, `nn.TransformerEncoder` over `nn.TransformerEncoderLayer`, the causal
mask from `nn.Transformer.generate_square_subsequent_mask`, `init_weights` with `nn.init.uniform_`/`zeros_`,
`F.log_softmax` + `nn.NLLLoss`, `clip_grad_norm_`, manual SGD by `p.data.add_(p.grad, alpha=-lr)`, evaluation
under `torch.no_grad()` and the learning rate annealed by 4 when validation does not improve. Prints one loss and
perplexity per logged batch; `WEIGHTS=path` shares the initial weights between the two runs."""

# ruff: noqa: UP031 - the example's own %-format logging
import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from _weights import share_initial_weights

parser = argparse.ArgumentParser()
parser.add_argument("--emsize", type=int, default=32)
parser.add_argument("--nhid", type=int, default=64)
parser.add_argument("--nlayers", type=int, default=2)
parser.add_argument("--lr", type=float, default=5.0)
parser.add_argument("--clip", type=float, default=0.25)
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--bptt", type=int, default=8)
parser.add_argument("--nhead", type=int, default=2)
parser.add_argument("--seed", type=int, default=1111)
args = parser.parse_args()
torch.manual_seed(args.seed)
device = torch.device("cpu")

TEXT = """the quick brown fox jumps over the lazy dog and the dog sleeps in the sun while the fox runs
into the woods where the trees are tall and the air is cold the fox finds a river and drinks from it
the dog wakes up and looks for the fox but the fox is gone into the woods and the sun goes down""".split("\n")


class Dictionary:
    def __init__(self):
        self.word2idx, self.idx2word = {}, []

    def add_word(self, word):
        if word not in self.word2idx:
            self.idx2word.append(word)
            self.word2idx[word] = len(self.idx2word) - 1
        return self.word2idx[word]

    def __len__(self):
        return len(self.idx2word)


class Corpus:
    def __init__(self, lines):
        self.dictionary = Dictionary()
        self.train = self.tokenize(lines[:2] * 3)
        self.valid = self.tokenize(lines[2:])

    def tokenize(self, lines):
        idss = []
        for line in lines:
            words = line.split() + ["<eos>"]
            idss.append(torch.tensor([self.dictionary.add_word(w) for w in words]).type(torch.int64))
        return torch.cat(idss)


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout=0.1, max_len=5000):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        pe = pe.unsqueeze(0).transpose(0, 1)
        self.register_buffer("pe", pe)

    def forward(self, x):
        x = x + self.pe[:x.size(0), :]
        return self.dropout(x)


class TransformerModel(nn.Transformer):
    """Container module with an encoder, a positional encoding, a transformer encoder and a decoder."""

    def __init__(self, ntoken, ninp, nhead, nhid, nlayers, dropout=0.5):
        super().__init__(d_model=ninp, nhead=nhead, dim_feedforward=nhid, num_encoder_layers=nlayers,
                         dropout=dropout)
        self.model_type = "Transformer"
        self.src_mask = None
        self.pos_encoder = PositionalEncoding(ninp, dropout)
        self.input_emb = nn.Embedding(ntoken, ninp)
        self.ninp = ninp
        self.decoder = nn.Linear(ninp, ntoken)
        self.init_weights()

    def _generate_square_subsequent_mask(self, sz):
        return torch.log(torch.tril(torch.ones(sz, sz)))

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.input_emb.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, src, has_mask=True):
        if has_mask:
            if self.src_mask is None or self.src_mask.size(0) != len(src):
                self.src_mask = self._generate_square_subsequent_mask(len(src)).to(src.device)
        else:
            self.src_mask = None
        src = self.input_emb(src) * math.sqrt(self.ninp)
        src = self.pos_encoder(src)
        output = self.encoder(src, mask=self.src_mask)
        output = self.decoder(output)
        return F.log_softmax(output, dim=-1)


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous().to(device)


def get_batch(source, i):
    seq_len = min(args.bptt, len(source) - 1 - i)
    data = source[i:i + seq_len]
    target = source[i + 1:i + 1 + seq_len].view(-1)
    return data, target


corpus = Corpus(TEXT)
train_data, val_data = batchify(corpus.train, 4), batchify(corpus.valid, 2)
ntokens = len(corpus.dictionary)
# no dropout: torch on Intel CPUs draws its masks from MKL's stream, not the generator's
model = TransformerModel(ntokens, args.emsize, args.nhead, args.nhid, args.nlayers, dropout=0.0).to(device)
share_initial_weights({"model": model})
criterion = nn.NLLLoss()
mask = nn.Transformer.generate_square_subsequent_mask(4)
print("mask", mask.tolist(), "params", sum(p.numel() for p in model.parameters()))


def evaluate(data_source):
    model.eval()
    total_loss = 0.0
    with torch.no_grad():
        for i in range(0, data_source.size(0) - 1, args.bptt):
            data, targets = get_batch(data_source, i)
            output = model(data)
            output = output.view(-1, ntokens)
            total_loss += len(data) * criterion(output, targets).item()
    return total_loss / (len(data_source) - 1)


def train(epoch, lr):
    model.train()
    for batch, i in enumerate(range(0, train_data.size(0) - 1, args.bptt)):
        data, targets = get_batch(train_data, i)
        model.zero_grad()
        output = model(data)
        output = output.view(-1, ntokens)
        loss = criterion(output, targets)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)
        print("| epoch %3d | batch %3d | lr %02.2f | loss %5.4f | ppl %8.4f | norm %.5f"
              % (epoch, batch, lr, loss.item(), math.exp(loss.item()), norm.item()))


lr, best_val_loss = args.lr, None
for epoch in range(1, args.epochs + 1):
    train(epoch, lr)
    val_loss = evaluate(val_data)
    print("| end of epoch %3d | valid loss %5.4f | valid ppl %8.4f" % (epoch, val_loss, math.exp(val_loss)))
    if not best_val_loss or val_loss < best_val_loss:
        best_val_loss = val_loss
    else:
        lr /= 4.0
