"""Attribution, activation patching and a sparse autoencoder, in the idioms of public interpretability code (Captum's
saliency / InputXGradient / NoiseTunnel / IntegratedGradients / GuidedBackprop written out by hand, TransformerLens'
hook points and activation patching, the public sparse-autoencoder training code of the dictionary-learning
repositories), run unchanged under torch and under `python -m retrograd.run`.
Part 1: an MLP classifier (`nn.ReLU` modules) on four Gaussian blobs from NumPy's seeded generator, then vanilla
saliency (`x.requires_grad_()`, `out[range(n), target].sum().backward()`, `x.grad.abs()`), gradient x input,
SmoothGrad (noise from `torch.randn_like`), integrated gradients (alphas from `torch.linspace`, `torch.autograd.grad`
of the summed target outputs w.r.t. the scaled inputs, a trapezoid mean, the completeness gap printed) and guided
backprop by `register_full_backward_hook` on each `nn.ReLU` returning `(torch.clamp(grad_input[0], min=0.0),)`, and
the older visualisation repositories' DeconvNet by the deprecated `register_backward_hook` on a `copy.deepcopy` of
the model (a module holds one kind of backward hook).
Part 2: a one-layer attention model (`nn.MultiheadAttention(batch_first=True)` under a causal mask, an MLP with an
`nn.GELU` module, `nn.LayerNorm`, identity `HookPoint` modules) trained to copy the first token to the last position,
summarised torchsummary-style by a global `torch.nn.modules.module.register_module_forward_hook`; then
TransformerLens-style hooks: a cache of `output.detach()` from `register_forward_hook`, a `with_kwargs=True` pre-hook
that rewrites `need_weights`/`average_attn_weights` to read the attention pattern and a `with_kwargs=True` forward hook
that reads them back, zero and mean ablation by forward hooks returning a new output, patching a clean activation into a
corrupted run at one position (hooks made by `functools.partial`), attribution patching with the gradients caught by
full backward hooks and a tensor hook, a `register_forward_pre_hook` that projects a direction out of the unembedding's
input, `handle.remove()`, logit differences under `torch.no_grad()`.
Part 3: a sparse autoencoder on the cached MLP activations: pre-bias subtraction, ReLU encoder, decoder rows
renormalised after each step (`W_dec.data = W_dec.data / W_dec.data.norm(dim=-1, keepdim=True)`), the gradient
component parallel to the decoder rows removed before the step, MSE + L1 under Adam; prints the losses, L0
(`(acts > 0).float().sum(-1).mean()`), dead latents, a `torch.histc` of log10 feature densities and the loss with the
reconstruction spliced in by a forward hook.
`WEIGHTS=path` shares the initial weights (tests/programs/_draws.py shares SmoothGrad's noise)."""

import copy
from functools import partial

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from _weights import share_initial_weights

torch.manual_seed(0)
rng = np.random.default_rng(0)

DIM, CLASSES, PER_CLASS = 6, 4, 16
VOCAB, SEQ, D_MODEL, D_MLP, HEADS, D_SAE = 8, 5, 16, 32, 2, 64


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc_in = nn.Linear(D_MODEL, D_MLP)
        self.act = nn.GELU()
        self.fc_out = nn.Linear(D_MLP, D_MODEL)

    def forward(self, x):
        return self.fc_out(self.act(self.fc_in(x)))


class HookPoint(nn.Module):
    """An identity module that exists to be hooked (TransformerLens' hook points)."""

    def forward(self, x):
        return x


class TinyTransformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.hook_embed = HookPoint()
        self.hook_attn_out = HookPoint()
        self.hook_resid_mid = HookPoint()
        self.hook_mlp_out = HookPoint()
        self.embed = nn.Embedding(VOCAB, D_MODEL)
        self.pos_embed = nn.Parameter(torch.randn(SEQ, D_MODEL) * 0.1)
        self.ln1 = nn.LayerNorm(D_MODEL)
        self.attn = nn.MultiheadAttention(D_MODEL, HEADS, batch_first=True)
        self.ln2 = nn.LayerNorm(D_MODEL)
        self.mlp = MLP()
        self.ln_final = nn.LayerNorm(D_MODEL)
        self.unembed = nn.Linear(D_MODEL, VOCAB)
        self.register_buffer("mask", torch.triu(torch.ones(SEQ, SEQ, dtype=torch.bool), diagonal=1))

    def forward(self, tokens):
        resid = self.hook_embed(self.embed(tokens) + self.pos_embed[: tokens.shape[1]])
        h = self.ln1(resid)
        attn_out, _ = self.attn(h, h, h, attn_mask=self.mask, need_weights=False)
        resid = self.hook_resid_mid(resid + self.hook_attn_out(attn_out))
        resid = resid + self.hook_mlp_out(self.mlp(self.ln2(resid)))
        return self.unembed(self.ln_final(resid))


class SparseAutoencoder(nn.Module):
    def __init__(self, d_in, d_sae):
        super().__init__()
        self.W_enc = nn.Parameter(torch.nn.init.kaiming_uniform_(torch.empty(d_in, d_sae)))
        self.b_enc = nn.Parameter(torch.zeros(d_sae))
        self.W_dec = nn.Parameter(self.W_enc.data.T.clone())
        self.b_dec = nn.Parameter(torch.zeros(d_in))
        self.W_dec.data = self.W_dec.data / self.W_dec.data.norm(dim=-1, keepdim=True)

    def encode(self, x):
        return F.relu((x - self.b_dec) @ self.W_enc + self.b_enc)

    def forward(self, x):
        acts = self.encode(x)
        return acts @ self.W_dec + self.b_dec, acts

    @torch.no_grad()
    def remove_parallel_grad(self):
        W_dec_normed = self.W_dec / self.W_dec.norm(dim=-1, keepdim=True)
        self.W_dec.grad -= (self.W_dec.grad * W_dec_normed).sum(-1, keepdim=True) * W_dec_normed


classifier = nn.Sequential(nn.Linear(DIM, 24), nn.ReLU(), nn.Linear(24, 24), nn.ReLU(), nn.Linear(24, CLASSES))
model = TinyTransformer()
sae = SparseAutoencoder(D_MLP, D_SAE)
share_initial_weights({"classifier": classifier, "transformer": model, "sae": sae})

# ---------------------------------------------------------------- part 1: attribution on an MLP classifier
centres = rng.normal(0.0, 1.5, (CLASSES, DIM))
x_np = np.concatenate([c + 0.5 * rng.normal(0.0, 1.0, (PER_CLASS, DIM)) for c in centres]).astype(np.float32)
xs, ys = torch.from_numpy(x_np), torch.from_numpy(np.repeat(np.arange(CLASSES), PER_CLASS)).long()

opt = torch.optim.Adam(classifier.parameters(), lr=1e-2)
for step in range(30):
    loss = F.cross_entropy(classifier(xs), ys)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0 or step == 29:
        acc = (classifier(xs).argmax(dim=1) == ys).float().mean()
        print(f"classifier step {step} loss {loss.item():.6f} acc {acc.item():.4f}")
classifier.eval()
twin = copy.deepcopy(classifier)  # a module holds full or non-full backward hooks, never both

inputs = xs[::8].clone()  # two examples per class
n = inputs.shape[0]
target = classifier(inputs).argmax(dim=1)
baseline = torch.zeros_like(inputs)


def saliency(model, x, target):
    x = x.clone().requires_grad_()
    out = model(x)
    out[range(len(x)), target].sum().backward()
    return x.grad.abs()


def input_x_gradient(model, x, target):
    x = x.clone().requires_grad_()
    model(x)[torch.arange(len(x)), target].sum().backward()
    return x * x.grad


def smoothgrad(model, x, target, samples=8, stdev=0.15):
    total = torch.zeros_like(x)
    for _ in range(samples):
        noisy = (x + stdev * torch.randn_like(x)).requires_grad_(True)
        out = model(noisy).gather(1, target.unsqueeze(1)).sum()
        (grad,) = torch.autograd.grad(out, noisy)
        total += grad
    return total / samples


def integrated_gradients(model, x, baseline, target, steps=16):
    alphas = torch.linspace(0, 1, steps + 1)
    grads = []
    for alpha in alphas:
        scaled = (baseline + alpha * (x - baseline)).detach().requires_grad_()
        out = model(scaled)[torch.arange(len(x)), target]
        grads.append(torch.autograd.grad(out.sum(), scaled)[0])
    grads = torch.stack(grads)  # (steps + 1, n, DIM)
    avg = ((grads[:-1] + grads[1:]) / 2.0).mean(dim=0)
    return (x - baseline) * avg


def guided_backprop(model, x, target):
    def clamp_grad(module, grad_input, grad_output):
        return (torch.clamp(grad_input[0], min=0.0),)

    handles = [m.register_full_backward_hook(clamp_grad) for m in model.modules() if isinstance(m, nn.ReLU)]
    try:
        x = x.clone().requires_grad_()
        model(x)[range(len(x)), target].sum().backward()
        return x.grad.clone()
    finally:
        for h in handles:
            h.remove()


def deconvnet(model, x, target):
    """The older visualisation repositories' form: the deprecated register_backward_hook on each ReLU, passing
    back only the positive part of the gradient that reaches it (whatever the forward did)."""
    def positive_grad_out(module, grad_input, grad_output):
        return (F.relu(grad_output[0]),)

    handles = [m.register_backward_hook(positive_grad_out) for m in model.modules() if isinstance(m, nn.ReLU)]
    x = x.clone().requires_grad_()
    model(x)[range(len(x)), target].sum().backward()
    for h in handles:
        h.remove()
    return x.grad


sal = saliency(classifier, inputs, target)
gxi = input_x_gradient(classifier, inputs, target)
sg = smoothgrad(classifier, inputs, target)
ig = integrated_gradients(classifier, inputs, baseline, target)
gbp = guided_backprop(classifier, inputs, target)
deconv = deconvnet(twin, inputs, target)
plain = saliency(classifier, inputs, target)  # the hooks are gone again
with torch.no_grad():
    gap = ig.sum(dim=1) - (classifier(inputs)[range(n), target] - classifier(baseline)[range(n), target])
print(f"saliency sum {sal.sum().item():.6f} top feature {sal.argmax(dim=1).tolist()}")
print(f"gradient x input sum {gxi.sum().item():.6f} max {gxi.max().item():.6f}")
print(f"smoothgrad mean abs {sg.abs().mean().item():.6f} first {sg[0].tolist()[:3]}")
print(f"integrated gradients sum {ig.sum().item():.6f} completeness gap {gap.abs().max().item():.6f}")
print(f"guided backprop sum {gbp.sum().item():.6f} negatives {(gbp < 0).sum().item()} "
      f"hooks left {sum(len(m._backward_hooks) for m in classifier.modules())}")
print(f"saliency unchanged after removal {torch.equal(plain, sal)}")
cos = F.cosine_similarity(sal.flatten(), gbp.abs().flatten(), dim=0)
print(f"saliency vs guided cosine {cos.item():.6f} deconvnet sum {deconv.sum().item():.6f} "
      f"abs {deconv.abs().sum().item():.6f}")

# ---------------------------------------------------------------- part 2: hooks on a small attention model
tokens_all = torch.from_numpy(rng.integers(0, VOCAB, (256, SEQ))).long()
answers_all = tokens_all[:, 0]

# a model summary as torchsummary-style code takes it: one forward with a hook on every module (here the global one)
summary = []


def summarise(module, args, output):
    out = output[0] if isinstance(output, tuple) else output
    own = sum(p.numel() for p in module.parameters(recurse=False))
    summary.append(f"{type(module).__name__}{list(out.shape)}:{own}")


handle = torch.nn.modules.module.register_module_forward_hook(summarise)
with torch.no_grad():
    model(tokens_all[:2])
handle.remove()
print("summary " + " ".join(summary))
opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)
for step in range(60):
    batch = slice((step % 4) * 64, (step % 4 + 1) * 64)
    logits = model(tokens_all[batch])[:, -1]
    loss = F.cross_entropy(logits, answers_all[batch])
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 15 == 0 or step == 59:
        print(f"transformer step {step} loss {loss.item():.6f} acc "
              f"{(logits.argmax(-1) == answers_all[batch]).float().mean().item():.4f}")
model.eval()


def logit_diff(logits, right, wrong):
    last = logits[:, -1]
    return (last.gather(1, right.unsqueeze(1)) - last.gather(1, wrong.unsqueeze(1))).mean()


clean = tokens_all[:32]
corrupted = clean.clone()
corrupted[:, 0] = (clean[:, 0] + 1) % VOCAB
right, wrong = clean[:, 0], corrupted[:, 0]

# activation cache: forward hooks store detached outputs
cache = {}


def save_hook(name):
    def hook(module, args, output):
        cache[name] = (output[0] if isinstance(output, tuple) else output).detach()
    return hook


hook_points = {name: module for name, module in model.named_modules() if isinstance(module, HookPoint)}
handles = [module.register_forward_hook(save_hook(name)) for name, module in hook_points.items()]
handles += [model.get_submodule(name).register_forward_hook(save_hook(name))
            for name in ("attn", "mlp.act", "ln_final")]
with torch.no_grad():
    clean_logits = model(clean)
clean_cache = dict(cache)
with torch.no_grad():
    corrupted_logits = model(corrupted)
corrupted_cache = dict(cache)
for h in handles:
    h.remove()
print(f"cache {sorted((k, tuple(v.shape)) for k, v in clean_cache.items())}")
clean_diff = logit_diff(clean_logits, right, wrong).item()
corrupted_diff = logit_diff(corrupted_logits, right, wrong).item()
print(f"clean logit diff {clean_diff:.6f} corrupted logit diff {corrupted_diff:.6f}")


# attention pattern through kwargs hooks
def want_weights(module, args, kwargs):
    kwargs = dict(kwargs, need_weights=True, average_attn_weights=False)
    return args, kwargs


pattern = {}


def read_weights(module, args, kwargs, output):
    pattern["heads"] = output[1].detach()
    pattern["flags"] = (kwargs["need_weights"], kwargs["average_attn_weights"])


h1 = model.attn.register_forward_pre_hook(want_weights, with_kwargs=True)
h2 = model.attn.register_forward_hook(read_weights, with_kwargs=True)
with torch.no_grad():
    logits_with_pattern = model(clean)
h1.remove()
h2.remove()
heads = pattern["heads"]
print(f"pattern {tuple(heads.shape)} flags {pattern['flags']} last->first {heads[:, :, -1, 0].mean(0).tolist()} "
      f"masked {heads[:, :, 0, 1:].abs().sum().item():.6f}")
print(f"same logits with the pattern read {torch.allclose(logits_with_pattern, clean_logits)}")


def run_with_hook(module, hook, tokens):
    handle = module.register_forward_hook(hook)
    try:
        with torch.no_grad():
            return model(tokens)
    finally:
        handle.remove()


def zero_ablate(module, args, output):
    return (torch.zeros_like(output[0]), output[1])


def mean_ablate_mlp(module, args, output):
    return output.mean(dim=(0, 1), keepdim=True).expand_as(output)


zero_diff = logit_diff(run_with_hook(model.attn, zero_ablate, clean), right, wrong).item()
mean_diff = logit_diff(run_with_hook(model.mlp.act, mean_ablate_mlp, clean), right, wrong).item()
print(f"zero-ablated attn logit diff {zero_diff:.6f} mean-ablated mlp logit diff {mean_diff:.6f}")


def patch_position(module, args, output, name, pos):
    """Put the clean run's activation at one position into this (corrupted) run."""
    is_tuple = isinstance(output, tuple)
    act = (output[0] if is_tuple else output).clone()
    act[:, pos] = clean_cache[name][:, pos]
    return (act,) + tuple(output[1:]) if is_tuple else act


# activation patching: clean activations into the corrupted run, one position at a time
for name in ("hook_embed", "attn", "hook_resid_mid", "hook_mlp_out"):
    recovered = []
    for pos in range(SEQ):
        hook = partial(patch_position, name=name, pos=pos)
        patched = logit_diff(run_with_hook(model.get_submodule(name), hook, corrupted), right, wrong).item()
        recovered.append((patched - corrupted_diff) / (clean_diff - corrupted_diff))
    print(f"patch {name} recovered " + " ".join(f"{r:.4f}" for r in recovered))

# attribution patching: (clean - corrupted) activation times the metric's gradient on the corrupted run, the
# gradients caught by full backward hooks on the hook points (grad_output[0]) and a tensor hook on the logits
grad_cache = {}


def save_grad(name):
    def hook(module, grad_input, grad_output):
        grad_cache[name] = grad_output[0].detach()
    return hook


handles = [module.register_full_backward_hook(save_grad(name)) for name, module in hook_points.items()]
logits = model(corrupted)
logits.register_hook(lambda grad: grad_cache.__setitem__("logits", grad.detach()))
logit_diff(logits, right, wrong).backward()
for h in handles:
    h.remove()
model.zero_grad(set_to_none=True)
print(f"logits grad sum {grad_cache['logits'].sum().item():.6f} abs {grad_cache['logits'].abs().sum().item():.6f}")
for name in hook_points:
    attribution = ((clean_cache[name] - corrupted_cache[name]) * grad_cache[name]).sum(-1).mean(0)
    print(f"attribution {name} " + " ".join(f"{a:.4f}" for a in attribution.tolist()))

# direction ablation on the unembedding's input via a forward pre-hook
direction = clean_cache["ln_final"][:, -1].mean(0)
direction = direction / direction.norm()


def project_out(module, args):
    (x,) = args
    return (x - (x @ direction).unsqueeze(-1) * direction,)


handle = model.unembed.register_forward_pre_hook(project_out)
with torch.no_grad():
    projected_diff = logit_diff(model(clean), right, wrong).item()
handle.remove()
print(f"direction ablated logit diff {projected_diff:.6f} hooks left {len(model.unembed._forward_pre_hooks)}")

# ---------------------------------------------------------------- part 3: a sparse autoencoder on the MLP activations
with torch.no_grad():
    cache.clear()
    handle = model.mlp.act.register_forward_hook(save_hook("mlp.act"))
    model(tokens_all)
    handle.remove()
acts_data = cache["mlp.act"].reshape(-1, D_MLP)
print(f"sae data {tuple(acts_data.shape)} mean norm {acts_data.norm(dim=-1).mean().item():.6f}")


with torch.no_grad():
    sae.b_dec.data = acts_data.median(dim=0).values  # geometric-median-style init of the pre-bias
opt = torch.optim.Adam(sae.parameters(), lr=1e-2, betas=(0.9, 0.999))
L1_COEFF = 0.1
fired = torch.zeros(D_SAE, dtype=torch.bool)
for step in range(40):
    batch = acts_data[(step % 5) * 256:(step % 5 + 1) * 256]
    recon, acts = sae(batch)
    mse = (recon - batch).pow(2).sum(-1).mean()
    l1 = acts.abs().sum(-1).mean()
    loss = mse + L1_COEFF * l1
    opt.zero_grad()
    loss.backward()
    sae.remove_parallel_grad()
    opt.step()
    sae.W_dec.data = sae.W_dec.data / sae.W_dec.data.norm(dim=-1, keepdim=True)
    fired |= (acts > 0).any(dim=0)
    if step % 10 == 0 or step == 39:
        l0 = (acts > 0).float().sum(-1).mean()
        print(f"sae step {step} loss {loss.item():.6f} mse {mse.item():.6f} l1 {l1.item():.6f} l0 {l0.item():.4f} "
              f"dead {(~fired).sum().item()}")

with torch.no_grad():
    recon, acts = sae(acts_data)
    explained = 1 - (recon - acts_data).pow(2).sum() / (acts_data - acts_data.mean(0)).pow(2).sum()
    dead = ((acts > 0).sum(0) == 0).sum().item()
    print(f"sae explained variance {explained.item():.6f} dead latents {dead} "
          f"decoder norms {sae.W_dec.norm(dim=-1).min().item():.6f}")
    log_density = torch.log10((acts > 0).float().mean(0) + 1e-10)
    print(f"log10 feature density histogram {torch.histc(log_density, bins=5, min=-10, max=0).tolist()}")


def splice(module, args, output):
    return sae(output)[0]


labels = answers_all
with torch.no_grad():
    base_loss = F.cross_entropy(model(tokens_all)[:, -1], labels).item()
    handle = model.mlp.act.register_forward_hook(splice)
    spliced_loss = F.cross_entropy(model(tokens_all)[:, -1], labels).item()
    handle.remove()
    zero_handle = model.mlp.act.register_forward_hook(lambda m, a, o: torch.zeros_like(o))
    zero_loss = F.cross_entropy(model(tokens_all)[:, -1], labels).item()
    zero_handle.remove()
print(f"loss clean {base_loss:.6f} spliced {spliced_loss:.6f} zero-ablated {zero_loss:.6f} "
      f"recovered {(zero_loss - spliced_loss) / (zero_loss - base_loss):.4f}")
