"""A character-level MLP trained by hand in the idioms of makemore's "backprop ninja" exercise, run unchanged under
torch and under `python -m retrograd.run`: one `torch.Generator().manual_seed(...)` passed to every `randn`,
`randint` and `multinomial`, the forward pass broken into small named steps with `retain_grad()` on each, every
step's gradient written out by hand and compared with autograd's (`torch.allclose`, max abs diff), the fused
cross-entropy and batch-norm backward formulas, `p.grad = None`, training on the manual gradients with
`p.data += -lr * grad`, running batch-norm statistics kept under `torch.no_grad()`, and sampling names with
`torch.multinomial`. Prints the comparison, then one loss per step; `WEIGHTS=path` shares the initial weights."""

import os

import numpy as np
import torch
import torch.nn.functional as F

words = ("emma olivia ava isabella sophia charlotte mia amelia harper evelyn abigail emily elizabeth mila ella "
         "avery sofia camila aria scarlett victoria madison luna grace chloe penelope layla riley zoey nora lily "
         "eleanor hannah lillian addison aubrey ellie stella natalie zoe leah hazel violet aurora savannah audrey "
         "brooklyn bella claire skylar lucy paisley everly anna caroline nova genesis emilia kennedy").split()
chars = sorted(set("".join(words)))
stoi = {s: i + 1 for i, s in enumerate(chars)}
stoi["."] = 0
itos = {i: s for s, i in stoi.items()}
vocab_size = len(itos)
block_size = 3


def build_dataset(words):
    X, Y = [], []
    for w in words:
        context = [0] * block_size
        for ch in w + ".":
            ix = stoi[ch]
            X.append(context)
            Y.append(ix)
            context = context[1:] + [ix]
    return torch.tensor(X), torch.tensor(Y)


n1 = int(0.8 * len(words))
Xtr, Ytr = build_dataset(words[:n1])
Xdev, Ydev = build_dataset(words[n1:])


def cmp(s, dt, t):
    app = torch.allclose(dt, t.grad, rtol=1e-4, atol=1e-6)
    maxdiff = (dt - t.grad).abs().max().item()
    print(f"{s:15s} | approximate: {str(app):5s} | maxdiff small: {maxdiff < 1e-5}")


n_embd, n_hidden = 10, 64
g = torch.Generator().manual_seed(2147483647)
C = torch.randn((vocab_size, n_embd), generator=g)
W1 = torch.randn((n_embd * block_size, n_hidden), generator=g) * (5 / 3) / ((n_embd * block_size) ** 0.5)
b1 = torch.randn(n_hidden, generator=g) * 0.1  # useless with batch norm after it, kept for the exercise
W2 = torch.randn((n_hidden, vocab_size), generator=g) * 0.1
b2 = torch.randn(vocab_size, generator=g) * 0.1
bngain = torch.randn((1, n_hidden), generator=g) * 0.1 + 1.0
bnbias = torch.randn((1, n_hidden), generator=g) * 0.1
parameters = [C, W1, b1, W2, b2, bngain, bnbias]
weights = os.environ.get("WEIGHTS")
if weights and os.path.exists(weights):
    parameters = [torch.from_numpy(a) for a in np.load(weights).values()]
    C, W1, b1, W2, b2, bngain, bnbias = parameters
elif weights:
    np.savez(weights, *[p.numpy() for p in parameters])
print(sum(p.nelement() for p in parameters), "parameters")
for p in parameters:
    p.requires_grad = True

batch_size = 32
n = batch_size
ix = torch.randint(0, Xtr.shape[0], (batch_size,), generator=g)
Xb, Yb = Xtr[ix], Ytr[ix]

# forward pass, chunked into steps small enough to backpropagate one at a time
emb = C[Xb]
embcat = emb.view(emb.shape[0], -1)
hprebn = embcat @ W1 + b1
bnmeani = 1 / n * hprebn.sum(0, keepdim=True)
bndiff = hprebn - bnmeani
bndiff2 = bndiff ** 2
bnvar = 1 / (n - 1) * (bndiff2).sum(0, keepdim=True)  # Bessel's correction
bnvar_inv = (bnvar + 1e-5) ** -0.5
bnraw = bndiff * bnvar_inv
hpreact = bngain * bnraw + bnbias
h = torch.tanh(hpreact)
logits = h @ W2 + b2
logit_maxes = logits.max(1, keepdim=True).values
norm_logits = logits - logit_maxes
counts = norm_logits.exp()
counts_sum = counts.sum(1, keepdims=True)
counts_sum_inv = counts_sum ** -1
probs = counts * counts_sum_inv
logprobs = probs.log()
loss = -logprobs[range(n), Yb].mean()

for p in parameters:
    p.grad = None
for t in [logprobs, probs, counts, counts_sum, counts_sum_inv, norm_logits, logit_maxes, logits, h, hpreact,
          bnraw, bnvar_inv, bnvar, bndiff2, bndiff, hprebn, bnmeani, embcat, emb]:
    t.retain_grad()
loss.backward()
print(f"loss {loss.item():.6f} grad_fn {type(loss.grad_fn).__name__}")

# exercise 1: backpropagate through every step by hand
dlogprobs = torch.zeros_like(logprobs)
dlogprobs[range(n), Yb] = -1.0 / n
dprobs = (1.0 / probs) * dlogprobs
dcounts_sum_inv = (counts * dprobs).sum(1, keepdim=True)
dcounts = counts_sum_inv * dprobs
dcounts_sum = (-counts_sum ** -2) * dcounts_sum_inv
dcounts += torch.ones_like(counts) * dcounts_sum
dnorm_logits = counts * dcounts
dlogits = dnorm_logits.clone()
dlogit_maxes = (-dnorm_logits).sum(1, keepdim=True)
dlogits += F.one_hot(logits.max(1).indices, num_classes=logits.shape[1]) * dlogit_maxes
dh = dlogits @ W2.T
dW2 = h.T @ dlogits
db2 = dlogits.sum(0)
dhpreact = (1.0 - h ** 2) * dh
dbngain = (bnraw * dhpreact).sum(0, keepdim=True)
dbnraw = bngain * dhpreact
dbnbias = dhpreact.sum(0, keepdim=True)
dbndiff = bnvar_inv * dbnraw
dbnvar_inv = (bndiff * dbnraw).sum(0, keepdim=True)
dbnvar = (-0.5 * (bnvar + 1e-5) ** -1.5) * dbnvar_inv
dbndiff2 = (1.0 / (n - 1)) * torch.ones_like(bndiff2) * dbnvar
dbndiff += (2 * bndiff) * dbndiff2
dhprebn = dbndiff.clone()
dbnmeani = (-dbndiff).sum(0)
dhprebn += 1.0 / n * (torch.ones_like(hprebn) * dbnmeani)
dembcat = dhprebn @ W1.T
dW1 = embcat.T @ dhprebn
db1 = dhprebn.sum(0)
demb = dembcat.view(emb.shape)
dC = torch.zeros_like(C)
for k in range(Xb.shape[0]):
    for j in range(Xb.shape[1]):
        dC[Xb[k, j]] += demb[k, j]

for name, d, t in [("logprobs", dlogprobs, logprobs), ("probs", dprobs, probs),
                   ("counts_sum_inv", dcounts_sum_inv, counts_sum_inv), ("counts_sum", dcounts_sum, counts_sum),
                   ("counts", dcounts, counts), ("norm_logits", dnorm_logits, norm_logits),
                   ("logit_maxes", dlogit_maxes, logit_maxes), ("logits", dlogits, logits), ("h", dh, h),
                   ("W2", dW2, W2), ("b2", db2, b2), ("hpreact", dhpreact, hpreact), ("bngain", dbngain, bngain),
                   ("bnbias", dbnbias, bnbias), ("bnraw", dbnraw, bnraw), ("bnvar_inv", dbnvar_inv, bnvar_inv),
                   ("bnvar", dbnvar, bnvar), ("bndiff2", dbndiff2, bndiff2), ("bndiff", dbndiff, bndiff),
                   ("bnmeani", dbnmeani, bnmeani), ("hprebn", dhprebn, hprebn), ("embcat", dembcat, embcat),
                   ("W1", dW1, W1), ("b1", db1, b1), ("emb", demb, emb), ("C", dC, C)]:
    cmp(name, d, t)

# exercise 2 and 3: the fused cross-entropy and batch-norm formulas
loss_fast = F.cross_entropy(logits, Yb)
print(f"fast loss {loss_fast.item():.6f} diff {(loss_fast - loss).item():.6f}")
dlogits = F.softmax(logits, 1)
dlogits[range(n), Yb] -= 1
dlogits /= n
cmp("logits (fused)", dlogits, logits)
hpreact_fast = bngain * (hprebn - hprebn.mean(0, keepdim=True)) / torch.sqrt(
    hprebn.var(0, keepdim=True, unbiased=True) + 1e-5) + bnbias
print(f"max diff batch norm {(hpreact_fast - hpreact).abs().max().item() < 1e-5}")
dhprebn = bngain * bnvar_inv / n * (n * dhpreact - dhpreact.sum(0) - n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0))
cmp("hprebn (fused)", dhprebn, hprebn)

# exercise 4: train on the hand-written gradients
bnmean_running = torch.zeros((1, n_hidden))
bnstd_running = torch.ones((1, n_hidden))
with torch.no_grad():
    for i in range(30):
        ix = torch.randint(0, Xtr.shape[0], (batch_size,), generator=g)
        Xb, Yb = Xtr[ix], Ytr[ix]
        emb = C[Xb]
        embcat = emb.view(emb.shape[0], -1)
        hprebn = embcat @ W1 + b1
        bnmean = hprebn.mean(0, keepdim=True)
        bnvar = hprebn.var(0, keepdim=True, unbiased=True)
        bnvar_inv = (bnvar + 1e-5) ** -0.5
        bnraw = (hprebn - bnmean) * bnvar_inv
        hpreact = bngain * bnraw + bnbias
        h = torch.tanh(hpreact)
        logits = h @ W2 + b2
        loss = F.cross_entropy(logits, Yb)
        bnmean_running = 0.999 * bnmean_running + 0.001 * bnmean
        bnstd_running = 0.999 * bnstd_running + 0.001 * bnvar.sqrt()

        dlogits = F.softmax(logits, 1)
        dlogits[range(n), Yb] -= 1
        dlogits /= n
        dh = dlogits @ W2.T
        dW2, db2 = h.T @ dlogits, dlogits.sum(0)
        dhpreact = (1.0 - h ** 2) * dh
        dbngain = (bnraw * dhpreact).sum(0, keepdim=True)
        dbnbias = dhpreact.sum(0, keepdim=True)
        dhprebn = bngain * bnvar_inv / n * (n * dhpreact - dhpreact.sum(0)
                                            - n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0))
        dembcat = dhprebn @ W1.T
        dW1, db1 = embcat.T @ dhprebn, dhprebn.sum(0)
        demb = dembcat.view(emb.shape)
        dC = torch.zeros_like(C)
        dC.index_add_(0, Xb.view(-1), demb.view(-1, n_embd))
        grads = [dC, dW1, db1, dW2, db2, dbngain, dbnbias]
        lr = 0.1 if i < 20 else 0.01
        for p, grad in zip(parameters, grads):
            p.data += -lr * grad
        if i % 5 == 0:
            print(f"{i:4d}/30: {loss.item():.6f}")


@torch.no_grad()
def split_loss(split):
    x, y = {"train": (Xtr, Ytr), "val": (Xdev, Ydev)}[split]
    emb = C[x]
    hpreact = bngain * (emb.view(emb.shape[0], -1) @ W1 + b1 - bnmean_running) / bnstd_running + bnbias
    logits = torch.tanh(hpreact) @ W2 + b2
    print(split, f"{F.cross_entropy(logits, y).item():.6f}")


split_loss("train")
split_loss("val")
print(f"running mean {bnmean_running.abs().sum().item():.6f} std {bnstd_running.sum().item():.6f}")

g = torch.Generator().manual_seed(2147483647 + 10)
for _ in range(4):
    out, context = [], [0] * block_size
    while True:
        emb = C[torch.tensor([context])]
        hpreact = bngain * (emb.view(1, -1) @ W1 + b1 - bnmean_running) / bnstd_running + bnbias
        probs = F.softmax(torch.tanh(hpreact) @ W2 + b2, dim=1)
        ix = torch.multinomial(probs, num_samples=1, generator=g).item()
        context = context[1:] + [ix]
        out.append(ix)
        if ix == 0 or len(out) > 12:
            break
    print("".join(itos[i] for i in out))
