"""A toy translation with nn.Transformer in the idioms of PyTorch's tutorial "Language Translation with
nn.Transformer and torchtext", of pytorch/examples and of Harvard NLP's "The Annotated Transformer", run unchanged
under torch and under `python -m retrograd.run`. The corpus: digit sequences from NumPy's seeded generator, to be
written backwards with every digit shifted by one. Part one is the tutorial's `Seq2SeqTransformer` over
`nn.Transformer` (sequence first): a `TokenEmbedding` scaled by `math.sqrt(emb_size)`, a sinusoidal
`PositionalEncoding` kept by `register_buffer` behind dropout, the hand-written float causal mask
(`torch.triu(...) == 1).transpose(0, 1)`, `masked_fill` with `-inf`), bool key padding masks, a `collate_fn` that
adds BOS/EOS and calls `pad_sequence`, `xavier_uniform_` over the parameters with `dim() > 1`,
`CrossEntropyLoss(ignore_index=PAD_IDX, label_smoothing=0.1)`, `Adam(betas=(0.9, 0.98), eps=1e-9)` under the Noam
warmup by `LambdaLR`, then greedy decoding under `model.eval()` and `torch.no_grad()`. Part two is the same model
`batch_first=True` with `nn.Transformer.generate_square_subsequent_mask`, evaluated where torch's encoder takes its
nested-tensor fast path (eval mode, no grad, a key padding mask: padded rows of the memory come out zero), and a
small beam search (`log_softmax`, `topk` over the flattened scores, `torch.cat` of the hypotheses). Part three is
the Annotated Transformer's hand-written `EncoderDecoder` (`clones` by `copy.deepcopy`, its `LayerNorm` with
`a_2`/`b_2` and the unbiased `std`, `SublayerConnection`, `MultiHeadedAttention` with `masked_fill(mask == 0, -1e9)`,
`subsequent_mask` by `torch.triu(...).type(torch.uint8) == 0`, `LabelSmoothing` by `nn.KLDivLoss(reduction="sum")`,
the `rate` schedule) trained on the copy task and decoded greedily. `WEIGHTS=path` shares the initial weights
(tests/programs/_draws.py shares the dropout draws)."""

import copy
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from _weights import share_initial_weights
from torch import Tensor
from torch.nn import Transformer
from torch.nn.utils.rnn import pad_sequence
from torch.optim.lr_scheduler import LambdaLR

torch.manual_seed(0)
PAD_IDX, BOS_IDX, EOS_IDX = 0, 1, 2
VOCAB = 13  # three specials and the ten digits
EMB_SIZE, NHEAD, FFN_HID_DIM, BATCH_SIZE = 32, 4, 64, 16

rng = np.random.default_rng(0)


def make_pair():
    digits = rng.integers(0, 10, size=int(rng.integers(3, 7)))
    return digits + 3, (digits[::-1] + 1) % 10 + 3


train_pairs = [make_pair() for _ in range(96)]
test_pairs = [make_pair() for _ in range(4)]


def collate_fn(batch):
    src_batch, tgt_batch = [], []
    for src_sample, tgt_sample in batch:
        src_batch.append(torch.cat((torch.tensor([BOS_IDX]), torch.tensor(src_sample), torch.tensor([EOS_IDX]))))
        tgt_batch.append(torch.cat((torch.tensor([BOS_IDX]), torch.tensor(tgt_sample), torch.tensor([EOS_IDX]))))
    src_batch = pad_sequence(src_batch, padding_value=PAD_IDX)
    tgt_batch = pad_sequence(tgt_batch, padding_value=PAD_IDX)
    return src_batch, tgt_batch


class PositionalEncoding(nn.Module):
    def __init__(self, emb_size: int, dropout: float, maxlen: int = 64):
        super().__init__()
        den = torch.exp(- torch.arange(0, emb_size, 2) * math.log(10000) / emb_size)
        pos = torch.arange(0, maxlen).reshape(maxlen, 1)
        pos_embedding = torch.zeros((maxlen, emb_size))
        pos_embedding[:, 0::2] = torch.sin(pos * den)
        pos_embedding[:, 1::2] = torch.cos(pos * den)
        pos_embedding = pos_embedding.unsqueeze(-2)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("pos_embedding", pos_embedding)

    def forward(self, token_embedding: Tensor):
        return self.dropout(token_embedding + self.pos_embedding[:token_embedding.size(0), :])


class TokenEmbedding(nn.Module):
    def __init__(self, vocab_size: int, emb_size):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, emb_size)
        self.emb_size = emb_size

    def forward(self, tokens: Tensor):
        return self.embedding(tokens.long()) * math.sqrt(self.emb_size)


class Seq2SeqTransformer(nn.Module):
    def __init__(self, num_encoder_layers, num_decoder_layers, emb_size, nhead, src_vocab_size, tgt_vocab_size,
                 dim_feedforward=512, dropout=0.1, batch_first=False):
        super().__init__()
        self.batch_first = batch_first
        self.transformer = Transformer(d_model=emb_size, nhead=nhead, num_encoder_layers=num_encoder_layers,
                                       num_decoder_layers=num_decoder_layers, dim_feedforward=dim_feedforward,
                                       dropout=dropout, batch_first=batch_first)
        self.generator = nn.Linear(emb_size, tgt_vocab_size)
        self.src_tok_emb = TokenEmbedding(src_vocab_size, emb_size)
        self.tgt_tok_emb = TokenEmbedding(tgt_vocab_size, emb_size)
        self.positional_encoding = PositionalEncoding(emb_size, dropout=dropout)

    def embed(self, tokens, tok_emb):
        if self.batch_first:  # the positional table is sequence first
            return self.positional_encoding(tok_emb(tokens).transpose(0, 1)).transpose(0, 1)
        return self.positional_encoding(tok_emb(tokens))

    def forward(self, src, trg, src_mask, tgt_mask, src_padding_mask, tgt_padding_mask, memory_key_padding_mask):
        src_emb = self.embed(src, self.src_tok_emb)
        tgt_emb = self.embed(trg, self.tgt_tok_emb)
        outs = self.transformer(src_emb, tgt_emb, src_mask, tgt_mask, None,
                                src_padding_mask, tgt_padding_mask, memory_key_padding_mask)
        return self.generator(outs)

    def encode(self, src: Tensor, src_mask: Tensor, src_key_padding_mask=None):
        return self.transformer.encoder(self.embed(src, self.src_tok_emb), src_mask,
                                        src_key_padding_mask=src_key_padding_mask)

    def decode(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor, memory_key_padding_mask=None):
        return self.transformer.decoder(self.embed(tgt, self.tgt_tok_emb), memory, tgt_mask,
                                        memory_key_padding_mask=memory_key_padding_mask)


def generate_square_subsequent_mask(sz):
    mask = (torch.triu(torch.ones((sz, sz))) == 1).transpose(0, 1)
    mask = mask.float().masked_fill(mask == 0, float("-inf")).masked_fill(mask == 1, 0.0)
    return mask


def create_mask(src, tgt):
    src_seq_len = src.shape[0]
    tgt_seq_len = tgt.shape[0]
    tgt_mask = generate_square_subsequent_mask(tgt_seq_len)
    src_mask = torch.zeros((src_seq_len, src_seq_len)).type(torch.bool)
    src_padding_mask = (src == PAD_IDX).transpose(0, 1)
    tgt_padding_mask = (tgt == PAD_IDX).transpose(0, 1)
    return src_mask, tgt_mask, src_padding_mask, tgt_padding_mask


def noam(d_model, warmup):
    return lambda step: d_model ** -0.5 * min((step + 1) ** -0.5, (step + 1) * warmup ** -1.5)


def make_model(batch_first):
    model = Seq2SeqTransformer(2, 2, EMB_SIZE, NHEAD, VOCAB, VOCAB, FFN_HID_DIM, dropout=0.1,
                               batch_first=batch_first)
    for p in model.parameters():
        if p.dim() > 1:
            nn.init.xavier_uniform_(p)
    return model


batches = [collate_fn(train_pairs[i:i + BATCH_SIZE]) for i in range(0, len(train_pairs), BATCH_SIZE)]
loss_fn = torch.nn.CrossEntropyLoss(ignore_index=PAD_IDX, label_smoothing=0.1)


# The Annotated Transformer
def clones(module, N):
    return nn.ModuleList([copy.deepcopy(module) for _ in range(N)])


class LayerNorm(nn.Module):
    def __init__(self, features, eps=1e-6):
        super().__init__()
        self.a_2 = nn.Parameter(torch.ones(features))
        self.b_2 = nn.Parameter(torch.zeros(features))
        self.eps = eps

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        std = x.std(-1, keepdim=True)
        return self.a_2 * (x - mean) / (std + self.eps) + self.b_2


class SublayerConnection(nn.Module):
    def __init__(self, size, dropout):
        super().__init__()
        self.norm = LayerNorm(size)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, sublayer):
        return x + self.dropout(sublayer(self.norm(x)))


def attention(query, key, value, mask=None, dropout=None):
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p_attn = scores.softmax(dim=-1)
    if dropout is not None:
        p_attn = dropout(p_attn)
    return torch.matmul(p_attn, value), p_attn


class MultiHeadedAttention(nn.Module):
    def __init__(self, h, d_model, dropout=0.1):
        super().__init__()
        assert d_model % h == 0
        self.d_k = d_model // h
        self.h = h
        self.linears = clones(nn.Linear(d_model, d_model), 4)
        self.attn = None
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, query, key, value, mask=None):
        if mask is not None:
            mask = mask.unsqueeze(1)
        nbatches = query.size(0)
        query, key, value = [lin(x).view(nbatches, -1, self.h, self.d_k).transpose(1, 2)
                             for lin, x in zip(self.linears, (query, key, value))]
        x, self.attn = attention(query, key, value, mask=mask, dropout=self.dropout)
        x = x.transpose(1, 2).contiguous().view(nbatches, -1, self.h * self.d_k)
        del query
        del key
        del value
        return self.linears[-1](x)


class PositionwiseFeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.1):
        super().__init__()
        self.w_1 = nn.Linear(d_model, d_ff)
        self.w_2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.w_2(self.dropout(self.w_1(x).relu()))


class EncoderLayer(nn.Module):
    def __init__(self, size, self_attn, feed_forward, dropout):
        super().__init__()
        self.self_attn = self_attn
        self.feed_forward = feed_forward
        self.sublayer = clones(SublayerConnection(size, dropout), 2)
        self.size = size

    def forward(self, x, mask):
        x = self.sublayer[0](x, lambda x: self.self_attn(x, x, x, mask))
        return self.sublayer[1](x, self.feed_forward)


class Encoder(nn.Module):
    def __init__(self, layer, N):
        super().__init__()
        self.layers = clones(layer, N)
        self.norm = LayerNorm(layer.size)

    def forward(self, x, mask):
        for layer in self.layers:
            x = layer(x, mask)
        return self.norm(x)


class DecoderLayer(nn.Module):
    def __init__(self, size, self_attn, src_attn, feed_forward, dropout):
        super().__init__()
        self.size = size
        self.self_attn = self_attn
        self.src_attn = src_attn
        self.feed_forward = feed_forward
        self.sublayer = clones(SublayerConnection(size, dropout), 3)

    def forward(self, x, memory, src_mask, tgt_mask):
        m = memory
        x = self.sublayer[0](x, lambda x: self.self_attn(x, x, x, tgt_mask))
        x = self.sublayer[1](x, lambda x: self.src_attn(x, m, m, src_mask))
        return self.sublayer[2](x, self.feed_forward)


class Decoder(nn.Module):
    def __init__(self, layer, N):
        super().__init__()
        self.layers = clones(layer, N)
        self.norm = LayerNorm(layer.size)

    def forward(self, x, memory, src_mask, tgt_mask):
        for layer in self.layers:
            x = layer(x, memory, src_mask, tgt_mask)
        return self.norm(x)


class Embeddings(nn.Module):
    def __init__(self, d_model, vocab):
        super().__init__()
        self.lut = nn.Embedding(vocab, d_model)
        self.d_model = d_model

    def forward(self, x):
        return self.lut(x) * math.sqrt(self.d_model)


class AnnotatedPositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout, max_len=64):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * -(math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        pe = pe.unsqueeze(0)
        self.register_buffer("pe", pe)

    def forward(self, x):
        x = x + self.pe[:, : x.size(1)].requires_grad_(False)
        return self.dropout(x)


class Generator(nn.Module):
    def __init__(self, d_model, vocab):
        super().__init__()
        self.proj = nn.Linear(d_model, vocab)

    def forward(self, x):
        return F.log_softmax(self.proj(x), dim=-1)


class EncoderDecoder(nn.Module):
    def __init__(self, encoder, decoder, src_embed, tgt_embed, generator):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.src_embed = src_embed
        self.tgt_embed = tgt_embed
        self.generator = generator

    def forward(self, src, tgt, src_mask, tgt_mask):
        return self.decode(self.encode(src, src_mask), src_mask, tgt, tgt_mask)

    def encode(self, src, src_mask):
        return self.encoder(self.src_embed(src), src_mask)

    def decode(self, memory, src_mask, tgt, tgt_mask):
        return self.decoder(self.tgt_embed(tgt), memory, src_mask, tgt_mask)


def make_annotated_model(src_vocab, tgt_vocab, N=2, d_model=32, d_ff=64, h=4, dropout=0.1):
    c = copy.deepcopy
    attn = MultiHeadedAttention(h, d_model)
    ff = PositionwiseFeedForward(d_model, d_ff, dropout)
    position = AnnotatedPositionalEncoding(d_model, dropout)
    model = EncoderDecoder(
        Encoder(EncoderLayer(d_model, c(attn), c(ff), dropout), N),
        Decoder(DecoderLayer(d_model, c(attn), c(attn), c(ff), dropout), N),
        nn.Sequential(Embeddings(d_model, src_vocab), c(position)),
        nn.Sequential(Embeddings(d_model, tgt_vocab), c(position)),
        Generator(d_model, tgt_vocab),
    )
    for p in model.parameters():
        if p.dim() > 1:
            nn.init.xavier_uniform_(p)
    return model


def subsequent_mask(size):
    attn_shape = (1, size, size)
    mask = torch.triu(torch.ones(attn_shape), diagonal=1).type(torch.uint8)
    return mask == 0


class Batch:
    def __init__(self, src, tgt=None, pad=2):
        self.src = src
        self.src_mask = (src != pad).unsqueeze(-2)
        if tgt is not None:
            self.tgt = tgt[:, :-1]
            self.tgt_y = tgt[:, 1:]
            self.tgt_mask = self.make_std_mask(self.tgt, pad)
            self.ntokens = (self.tgt_y != pad).data.sum()

    @staticmethod
    def make_std_mask(tgt, pad):
        tgt_mask = (tgt != pad).unsqueeze(-2)
        tgt_mask = tgt_mask & subsequent_mask(tgt.size(-1)).type_as(tgt_mask.data)
        return tgt_mask


class LabelSmoothing(nn.Module):
    def __init__(self, size, padding_idx, smoothing=0.0):
        super().__init__()
        self.criterion = nn.KLDivLoss(reduction="sum")
        self.padding_idx = padding_idx
        self.confidence = 1.0 - smoothing
        self.smoothing = smoothing
        self.size = size
        self.true_dist = None

    def forward(self, x, target):
        assert x.size(1) == self.size
        true_dist = x.data.clone()
        true_dist.fill_(self.smoothing / (self.size - 2))
        true_dist.scatter_(1, target.data.unsqueeze(1), self.confidence)
        true_dist[:, self.padding_idx] = 0
        mask = torch.nonzero(target.data == self.padding_idx)
        if mask.dim() > 0:
            true_dist.index_fill_(0, mask.squeeze(), 0.0)
        self.true_dist = true_dist
        return self.criterion(x, true_dist.clone().detach())


def rate(step, model_size, factor, warmup):
    if step == 0:
        step = 1
    return factor * (model_size ** (-0.5) * min(step ** (-0.5), step * warmup ** (-1.5)))


def data_gen(V, batch_size, nbatches):
    for _ in range(nbatches):
        data = torch.from_numpy(rng.integers(1, V, size=(batch_size, 8)))
        data[:, 0] = 1
        src = data.requires_grad_(False).clone().detach()
        tgt = data.requires_grad_(False).clone().detach()
        yield Batch(src, tgt, 0)


def greedy_decode_annotated(model, src, src_mask, max_len, start_symbol):
    memory = model.encode(src, src_mask)
    ys = torch.zeros(1, 1).fill_(start_symbol).type_as(src.data)
    for _ in range(max_len - 1):
        out = model.decode(memory, src_mask, ys, subsequent_mask(ys.size(1)).type_as(src.data))
        prob = model.generator(out[:, -1])
        _, next_word = torch.max(prob, dim=1)
        next_word = next_word.data[0]
        ys = torch.cat([ys, torch.zeros(1, 1).type_as(src.data).fill_(next_word)], dim=1)
    return ys


# the three models, made before any training so that their initial weights can be shared
V = 11  # the copy task's vocabulary
transformer = make_model(batch_first=False)
model = make_model(batch_first=True)
annotated = make_annotated_model(V, V, N=2)
share_initial_weights({"seq_first": transformer, "batch_first": model, "annotated": annotated})
print(transformer.transformer.encoder.layers[0])
print(f"parameters {sum(p.numel() for p in transformer.parameters())} and "
      f"{sum(p.numel() for p in annotated.parameters())}")

# Part one: the tutorial, sequence first
src, tgt = batches[0]
src_mask, tgt_mask, src_padding_mask, tgt_padding_mask = create_mask(src[:, :3], tgt[:4, :3])
print(f"src {tuple(src.shape)} tgt {tuple(tgt.shape)} first target column {tgt[:, 0].tolist()}")
print(tgt_mask)
print(src_padding_mask)
print(nn.Transformer.generate_square_subsequent_mask(3))
optimizer = torch.optim.Adam(transformer.parameters(), lr=0.5, betas=(0.9, 0.98), eps=1e-9)
scheduler = LambdaLR(optimizer, noam(EMB_SIZE, warmup=20))


def train_epoch(model, optimizer):
    model.train()
    losses = 0
    for src, tgt in batches:
        tgt_input = tgt[:-1, :]
        src_mask, tgt_mask, src_padding_mask, tgt_padding_mask = create_mask(src, tgt_input)
        logits = model(src, tgt_input, src_mask, tgt_mask, src_padding_mask, tgt_padding_mask, src_padding_mask)
        optimizer.zero_grad()
        tgt_out = tgt[1:, :]
        loss = loss_fn(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1))
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses += loss.item()
    return losses / len(batches)


def evaluate(model):
    model.eval()
    losses = 0
    with torch.no_grad():
        for src, tgt in batches[:2]:
            tgt_input = tgt[:-1, :]
            src_mask, tgt_mask, src_padding_mask, tgt_padding_mask = create_mask(src, tgt_input)
            logits = model(src, tgt_input, src_mask, tgt_mask, src_padding_mask, tgt_padding_mask,
                           src_padding_mask)
            losses += loss_fn(logits.reshape(-1, logits.shape[-1]), tgt[1:, :].reshape(-1)).item()
    return losses / 2


def greedy_decode(model, src, src_mask, max_len, start_symbol):
    memory = model.encode(src, src_mask)
    ys = torch.ones(1, 1).fill_(start_symbol).type(torch.long)
    for _ in range(max_len - 1):
        tgt_mask = (generate_square_subsequent_mask(ys.size(0)).type(torch.bool))
        out = model.decode(ys, memory, tgt_mask)
        out = out.transpose(0, 1)
        prob = model.generator(out[:, -1])
        _, next_word = torch.max(prob, dim=1)
        next_word = next_word.item()
        ys = torch.cat([ys, torch.ones(1, 1).type_as(src.data).fill_(next_word)], dim=0)
        if next_word == EOS_IDX:
            break
    return ys


def translate(model, src_digits):
    model.eval()
    src = torch.cat((torch.tensor([BOS_IDX]), torch.tensor(src_digits), torch.tensor([EOS_IDX]))).view(-1, 1)
    num_tokens = src.shape[0]
    src_mask = (torch.zeros(num_tokens, num_tokens)).type(torch.bool)
    with torch.no_grad():
        tgt_tokens = greedy_decode(model, src, src_mask, max_len=num_tokens + 3, start_symbol=BOS_IDX).flatten()
    return " ".join(str(t - 3) for t in tgt_tokens.tolist() if t > EOS_IDX)


for epoch in range(1, 9):
    train_loss = train_epoch(transformer, optimizer)
    val_loss = evaluate(transformer)
    print(f"Epoch: {epoch}, Train loss: {train_loss:.4f}, Val loss: {val_loss:.4f}, "
          f"lr {scheduler.get_last_lr()[0]:.6f}")
for src_digits, tgt_digits in test_pairs[:2]:
    print(f"  {' '.join(str(t - 3) for t in src_digits)} -> {translate(transformer, src_digits)} "
          f"(want {' '.join(str(t - 3) for t in tgt_digits)})")
    with torch.no_grad():
        src = torch.tensor(np.concatenate(([BOS_IDX], src_digits, [EOS_IDX]))).view(-1, 1)
        memory = transformer.encode(src, torch.zeros(src.shape[0], src.shape[0]).type(torch.bool))
        print(f"  memory norm {memory.norm().item():.5f} mean {memory.mean().item():.6f}")

# Part two: batch first, the library's causal mask, the fast path in eval mode, beam search
optimizer = torch.optim.Adam(model.parameters(), lr=0.5, betas=(0.9, 0.98), eps=1e-9)
scheduler = LambdaLR(optimizer, noam(EMB_SIZE, warmup=20))
for epoch in range(1, 5):
    model.train()
    total = 0.0
    for src, tgt in batches:
        src, tgt = src.t(), tgt.t()
        tgt_input, tgt_out = tgt[:, :-1], tgt[:, 1:]
        tgt_mask = nn.Transformer.generate_square_subsequent_mask(tgt_input.size(1))
        src_padding_mask, tgt_padding_mask = src == PAD_IDX, tgt_input == PAD_IDX
        logits = model(src, tgt_input, None, tgt_mask, src_padding_mask, tgt_padding_mask, src_padding_mask)
        loss = loss_fn(logits.reshape(-1, logits.size(-1)), tgt_out.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        total += loss.item()
    print(f"batch_first epoch {epoch} loss {total / len(batches):.4f}")

src, tgt = batches[0]
src, tgt = src.t(), tgt.t()
src_padding_mask = src == PAD_IDX
model.eval()
with torch.no_grad():
    memory = model.encode(src, None, src_key_padding_mask=src_padding_mask)
    print(f"eval memory {tuple(memory.shape)} padded rows {memory[src_padding_mask].abs().sum().item():.4f} "
          f"kept rows norm {memory[~src_padding_mask].norm().item():.5f}")
    tgt_input = tgt[:, :-1]
    tgt_mask = nn.Transformer.generate_square_subsequent_mask(tgt_input.size(1))
    logits = model(src, tgt_input, None, tgt_mask, src_padding_mask, tgt_input == PAD_IDX, src_padding_mask)
    print(f"eval logits mean {logits.mean().item():.6f} loss "
          f"{loss_fn(logits.reshape(-1, VOCAB), tgt[:, 1:].reshape(-1)).item():.5f}")
model.train()
with torch.no_grad():
    slow = model.encode(src, None, src_key_padding_mask=src_padding_mask)
print(f"train-mode memory padded rows nonzero: {bool(slow[src_padding_mask].abs().sum() > 0)}")
model.eval()


def beam_search(model, src_digits, beam_size=3, max_len=10):
    src = torch.tensor(np.concatenate(([BOS_IDX], src_digits, [EOS_IDX]))).unsqueeze(0)
    memory = model.encode(src, None)
    hyps = torch.full((1, 1), BOS_IDX, dtype=torch.long)
    scores = torch.zeros(1)
    finished = []
    for _ in range(max_len):
        out = model.decode(hyps, memory.expand(hyps.size(0), -1, -1),
                           nn.Transformer.generate_square_subsequent_mask(hyps.size(1)))
        log_probs = F.log_softmax(model.generator(out[:, -1]), dim=-1)
        candidates = (scores.unsqueeze(1) + log_probs).view(-1)
        top_scores, top_ids = candidates.topk(beam_size)
        beam_ids, token_ids = top_ids // VOCAB, top_ids % VOCAB
        hyps = torch.cat([hyps[beam_ids], token_ids.unsqueeze(1)], dim=1)
        scores = top_scores
        done = token_ids == EOS_IDX
        for hyp, score in zip(hyps[done], scores[done]):
            finished.append((score.item() / hyp.size(0), hyp))
        if len(finished) >= beam_size or bool(done.all()):
            break
        hyps, scores = hyps[~done], scores[~done]
    best_score, best = max(finished, key=lambda f: f[0]) if finished else (scores[0].item(), hyps[0])
    return " ".join(str(t - 3) for t in best.tolist() if t > EOS_IDX), best_score


with torch.no_grad():
    for src_digits, tgt_digits in test_pairs:
        words, score = beam_search(model, src_digits)
        print(f"  beam {' '.join(str(t - 3) for t in src_digits)} -> {words} score {score:.5f}")


# Part three: the Annotated Transformer on the copy task
criterion = LabelSmoothing(size=V, padding_idx=0, smoothing=0.0)
optimizer = torch.optim.Adam(annotated.parameters(), lr=0.5, betas=(0.9, 0.98), eps=1e-9)
lr_scheduler = LambdaLR(optimizer=optimizer, lr_lambda=lambda step: rate(step, model_size=32, factor=1.0,
                                                                              warmup=40))
for epoch in range(4):
    annotated.train()
    total_loss, total_tokens = 0.0, 0
    for batch in data_gen(V, 16, 6):
        out = annotated.forward(batch.src, batch.tgt, batch.src_mask, batch.tgt_mask)
        x = annotated.generator(out)
        loss = criterion(x.contiguous().view(-1, x.size(-1)), batch.tgt_y.contiguous().view(-1)) / batch.ntokens
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        lr_scheduler.step()
        total_loss += loss.item() * batch.ntokens.item()
        total_tokens += batch.ntokens.item()
    print(f"Epoch Step: {epoch} | Loss: {total_loss / total_tokens:6.4f} | "
          f"Learning Rate: {optimizer.param_groups[0]['lr']:6.2e}")

annotated.eval()
src = torch.LongTensor([[1, 2, 3, 4, 5, 6, 7, 8]])
src_mask = torch.ones(1, 1, src.size(1))
with torch.no_grad():
    print("copy:", greedy_decode_annotated(annotated, src, src_mask, max_len=src.size(1), start_symbol=1))
    print(f"last attention {tuple(annotated.decoder.layers[-1].src_attn.attn.shape)} "
          f"max {annotated.decoder.layers[-1].src_attn.attn.max().item():.5f}")
