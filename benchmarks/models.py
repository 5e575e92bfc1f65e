"""Real-model workloads: training steps of the models users write (a GPT, an LSTM language model, a ResNet block)
and GPT inference, each built from the library's own nn modules and optimisers, the same weights in both
libraries (drawn from one NumPy generator by parameter name)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .harness import Case


def _same_weights(lib: Any, model: Any) -> None:
    """Every parameter drawn from N(0, 0.02^2) (norm weights 1), in name order, from one seeded generator."""
    rng = np.random.default_rng(0)
    with lib.no_grad():
        for name, p in sorted(model.named_parameters()):
            values = np.ones(tuple(p.shape)) if name.endswith(("ln_1.weight", "ln_2.weight", "ln_f.weight")) else \
                rng.normal(0.0, 0.02, tuple(p.shape))
            p.copy_(lib.tensor(values.astype(np.float32)))


def _gpt(lib: Any, layers: int, width: int, context: int, vocab: int, exact: bool) -> Any:
    """A GPT as teaching code writes it: tanh-GELU with pow and masked_fill attention, or (exact) F.gelu and
    F.scaled_dot_product_attention; dropout 0.1, weight tying."""
    nn, functional = lib.nn, lib.nn.functional

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn, self.c_proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
            self.drop = nn.Dropout(0.1)
            self.register_buffer("mask", lib.tril(lib.ones(context, context)).view(1, 1, context, context))

        def forward(self, x):
            b, t, c = x.size()
            q, k, v = (z.view(b, t, 4, c // 4).transpose(1, 2) for z in self.c_attn(x).split(width, dim=2))
            if exact:
                y = functional.scaled_dot_product_attention(q, k, v, dropout_p=0.1 if self.training else 0.0,
                                                            is_causal=True)
            else:
                att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
                att = att.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf"))
                att = self.drop(functional.softmax(att, dim=-1))
                y = att @ v
            return self.drop(self.c_proj(y.transpose(1, 2).contiguous().view(b, t, c)))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.attn, self.ln_2 = nn.LayerNorm(width), Attention(), nn.LayerNorm(width)
            self.c_fc, self.c_proj = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)
            self.drop = nn.Dropout(0.1)

        def gelu(self, x):
            if exact:
                return functional.gelu(x)
            return 0.5 * x * (1.0 + lib.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * lib.pow(x, 3.0))))

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.drop(self.c_proj(self.gelu(self.c_fc(self.ln_2(x)))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(vocab, width), nn.Embedding(context, width)
            self.h = nn.ModuleList([Block() for _ in range(layers)])
            self.ln_f, self.lm_head = nn.LayerNorm(width), nn.Linear(width, vocab, bias=False)
            self.wte.weight = self.lm_head.weight

        def forward(self, idx):
            x = self.wte(idx) + self.wpe(lib.arange(idx.size(1), device=idx.device))
            for block in self.h:
                x = block(x)
            return self.lm_head(self.ln_f(x))

    return GPT()


def _gpt_cases(lib: Any, quick: bool, exact: bool) -> list[Case]:
    layers, width, context, batch, vocab = (1, 32, 16, 4, 65) if quick else (4, 128, 64, 32, 65)
    model = _gpt(lib, layers, width, context, vocab, exact)
    _same_weights(lib, model)
    rng = np.random.default_rng(1)
    x = lib.tensor(rng.integers(0, vocab, (batch, context)))
    y = lib.tensor(rng.integers(0, vocab, (batch, context)))
    optimizer = lib.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)

    def step(_: Any) -> None:
        model.train()
        loss = lib.nn.functional.cross_entropy(model(x).view(-1, vocab), y.view(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()

    def infer(_: Any) -> None:
        model.eval()
        with lib.no_grad():
            model(x)

    cases = [Case(f"train step, {layers}x{width}, batch {batch}x{context}", "ms/step", step, memory=True,
                  repeats=3 if quick else 8, warmup=1)]
    if not exact:
        cases.append(Case(f"no_grad forward, batch {batch}x{context}", "ms/call", infer, memory=True,
                          repeats=3 if quick else 10, warmup=1))
    return cases


def gpt(lib: Any, quick: bool) -> list[Case]:
    return _gpt_cases(lib.module, quick, exact=False)


def gpt_exact(lib: Any, quick: bool) -> list[Case]:
    return _gpt_cases(lib.module, quick, exact=True)


def lstm_lm(lib: Any, quick: bool) -> list[Case]:
    """word_language_model: embedding, 2-layer LSTM, tied decoder, bptt 35 x batch 20, SGD with clipping."""
    torch = lib.module
    nn = torch.nn
    vocab, hidden, bptt, batch = (100, 16, 5, 4) if quick else (10000, 200, 35, 20)

    class RNNModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder, self.rnn = nn.Embedding(vocab, hidden), nn.LSTM(hidden, hidden, 2)
            self.decoder = nn.Linear(hidden, vocab)
            self.decoder.weight = self.encoder.weight

        def forward(self, x, state):
            out, state = self.rnn(self.encoder(x), state)
            return self.decoder(out).view(-1, vocab), state

    model = RNNModel()
    _same_weights(torch, model)
    rng = np.random.default_rng(2)
    x, y = lib.tensor(rng.integers(0, vocab, (bptt, batch))), lib.tensor(rng.integers(0, vocab, bptt * batch))
    zeros = torch.zeros(2, batch, hidden)

    def step(_: Any) -> None:
        model.zero_grad()
        output, _ = model(x, (zeros, zeros))
        nn.functional.cross_entropy(output, y).backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        with torch.no_grad():
            for p in model.parameters():
                p.add_(p.grad, alpha=-20.0)

    return [Case(f"train step, {hidden} hidden, {bptt}x{batch}, vocab {vocab}", "ms/step", step, memory=True,
                 repeats=3 if quick else 8, warmup=1)]


def _resnet(torch: Any, channels: int) -> Any:
    """Two ResNet basic blocks (conv 3x3, BatchNorm, ReLU, identity shortcut) on a conv stem, and a linear head."""
    nn = torch.nn

    class BasicBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(channels)
            self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(channels)

        def forward(self, x):
            out = nn.functional.relu(self.bn1(self.conv1(x)))
            return nn.functional.relu(self.bn2(self.conv2(out)) + x)

    return nn.Sequential(nn.Conv2d(3, channels, 3, padding=1, bias=False), nn.BatchNorm2d(channels), nn.ReLU(),
                         BasicBlock(), BasicBlock(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(channels, 10))


def resnet_block(lib: Any, quick: bool) -> list[Case]:
    """Two ResNet basic blocks with BatchNorm and a linear head, SGD momentum: the CNN users train."""
    torch = lib.module
    nn = torch.nn
    channels, batch, size = (4, 4, 8) if quick else (16, 32, 32)
    model = _resnet(torch, channels)
    _same_weights(torch, model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    rng = np.random.default_rng(3)
    x = lib.tensor(rng.standard_normal((batch, 3, size, size)).astype(np.float32))
    y = lib.tensor(rng.integers(0, 10, batch))

    def step(_: Any) -> None:
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()

    return [Case(f"train step, {channels} channels, batch {batch} on {size}x{size}", "ms/step", step, memory=True,
                 repeats=3 if quick else 8, warmup=1)]
