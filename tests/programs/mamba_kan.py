"""A small Mamba language model and a Kolmogorov-Arnold network, in the idioms of two public codebases, run unchanged
under torch and under `python -m retrograd.run`.

mamba-minimal (johnma2006/mamba-minimal): a `ModelArgs` dataclass whose `__post_init__` derives d_inner and dt_rank;
`RMSNorm` (`x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight`); a `MambaBlock` whose `in_proj` output
is `split` into x and res, a depthwise causal `nn.Conv1d(groups=d_inner, padding=d_conv - 1)` cut back to the
sequence length, `F.silu`, `x_proj` split into (delta, B, C), `F.softplus(dt_proj(delta))`,
`A = -torch.exp(A_log.float())` from `torch.log` of a repeated `arange`, and the selective scan as a Python loop
over time with `torch.einsum("b l d, d n -> b l d n", ...)` for deltaA and deltaB_u, `torch.stack` of the ys and the
D skip (einops' `rearrange` written as `permute`); residual blocks in an `nn.ModuleList`, the lm_head tied to the
embedding; A_log and D marked `_no_weight_decay` (the official Mamba's attribute on the parameters), which picks the
AdamW parameter groups. Trained by AdamW with gradient clipping on a toy copy task (random tokens, a separator, the
tokens again; the loss only on the copy, `ignore_index=-100`) from NumPy's seeded generator, then mamba-minimal's
`generate`: greedy by `torch.argmax` and sampled by `torch.topk` filtering
(`probs[probs < values[:, -1, None]] = 0`, `probs.sum(axis=1, keepdims=True)`) and `torch.multinomial`; a checkpoint
in the Hugging Face layout (`backbone.` keys) through `torch.save` and `torch.load(weights_only=True)`, loaded back
with from_pretrained's key renaming.

efficient-kan (Blealtan/efficient-kan): `KANLinear` with a grid buffer from
`arange(...).expand(in, -1).contiguous()`, B-spline bases by the Cox-de Boor recursion on it, `curve2coeff` by
`torch.linalg.lstsq` on `torch.rand` noise at initialisation, `kaiming_uniform_` base and spline scaler weights, a
SiLU base branch plus the spline branch through `F.linear`, `regularization_loss` (L1 plus entropy), and
`update_grid` under `@torch.no_grad()` from the sorted batch (`torch.sort`, `torch.linspace(dtype=torch.int64)`,
`torch.arange`, `torch.concatenate`, `torch.bmm`, `grid.copy_`). Made and fitted in float64
(`torch.set_default_dtype`, as pykan's tutorials) to f(x, y) = exp(sin(pi x) + y^2) by LBFGS with a closure and the
strong Wolfe line search, the grid updated from the batch every other step, then fine-tuned by AdamW under
`ExponentialLR` and evaluated on a `torch.meshgrid(..., indexing="ij")` grid. `WEIGHTS=path` shares the initial
weights (tests/programs/_draws.py shares the sampling draws)."""

import io
import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from _weights import share_initial_weights

torch.manual_seed(0)
rng = np.random.default_rng(0)


# ----------------------------------------------------------------------------------------------------- Mamba
@dataclass
class ModelArgs:
    d_model: int
    n_layer: int
    vocab_size: int
    d_state: int = 4
    expand: int = 2
    dt_rank: int | str = "auto"
    d_conv: int = 4
    pad_vocab_size_multiple: int = 4
    conv_bias: bool = True
    bias: bool = False

    def __post_init__(self):
        self.d_inner = int(self.expand * self.d_model)
        if self.dt_rank == "auto":
            self.dt_rank = math.ceil(self.d_model / 16)
        if self.vocab_size % self.pad_vocab_size_multiple != 0:
            self.vocab_size += self.pad_vocab_size_multiple - self.vocab_size % self.pad_vocab_size_multiple


class RMSNorm(nn.Module):
    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class MambaBlock(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.args = args
        self.in_proj = nn.Linear(args.d_model, args.d_inner * 2, bias=args.bias)
        self.conv1d = nn.Conv1d(in_channels=args.d_inner, out_channels=args.d_inner, bias=args.conv_bias,
                                kernel_size=args.d_conv, groups=args.d_inner, padding=args.d_conv - 1)
        self.x_proj = nn.Linear(args.d_inner, args.dt_rank + args.d_state * 2, bias=False)
        self.dt_proj = nn.Linear(args.dt_rank, args.d_inner, bias=True)
        A = torch.arange(1, args.d_state + 1).unsqueeze(0).repeat(args.d_inner, 1)  # repeat 'n -> d n'
        self.A_log = nn.Parameter(torch.log(A))
        self.A_log._no_weight_decay = True  # as the official Mamba marks them for its optimizer's groups
        self.D = nn.Parameter(torch.ones(args.d_inner))
        self.D._no_weight_decay = True
        self.out_proj = nn.Linear(args.d_inner, args.d_model, bias=args.bias)

    def forward(self, x):
        (b, l, d) = x.shape
        x_and_res = self.in_proj(x)  # (b, l, 2 * d_in)
        (x, res) = x_and_res.split(split_size=[self.args.d_inner, self.args.d_inner], dim=-1)
        x = x.permute(0, 2, 1)  # rearrange 'b l d_in -> b d_in l'
        x = self.conv1d(x)[:, :, :l]
        x = x.permute(0, 2, 1)
        x = F.silu(x)
        y = self.ssm(x)
        y = y * F.silu(res)
        return self.out_proj(y)

    def ssm(self, x):
        (d_in, n) = self.A_log.shape
        A = -torch.exp(self.A_log.float())  # (d_in, n)
        D = self.D.float()
        x_dbl = self.x_proj(x)  # (b, l, dt_rank + 2 * n)
        (delta, B, C) = x_dbl.split(split_size=[self.args.dt_rank, n, n], dim=-1)
        delta = F.softplus(self.dt_proj(delta))  # (b, l, d_in)
        return self.selective_scan(x, delta, A, B, C, D)

    def selective_scan(self, u, delta, A, B, C, D):
        (b, l, d_in) = u.shape
        n = A.shape[1]
        deltaA = torch.exp(torch.einsum("b l d, d n -> b l d n", delta, A))
        deltaB_u = torch.einsum("b l d, b l n, b l d -> b l d n", delta, B, u)
        x = torch.zeros((b, d_in, n), device=deltaA.device)
        ys = []
        for i in range(l):
            x = deltaA[:, i] * x + deltaB_u[:, i]
            y = torch.einsum("b d n, b n -> b d", x, C[:, i, :])
            ys.append(y)
        y = torch.stack(ys, dim=1)  # (b, l, d_in)
        return y + u * D


class ResidualBlock(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.mixer = MambaBlock(args)
        self.norm = RMSNorm(args.d_model)

    def forward(self, x):
        return self.mixer(self.norm(x)) + x


class Mamba(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.args = args
        self.embedding = nn.Embedding(args.vocab_size, args.d_model)
        self.layers = nn.ModuleList([ResidualBlock(args) for _ in range(args.n_layer)])
        self.norm_f = RMSNorm(args.d_model)
        self.lm_head = nn.Linear(args.d_model, args.vocab_size, bias=False)
        self.lm_head.weight = self.embedding.weight  # tie the output projection to the embedding

    def forward(self, input_ids):
        x = self.embedding(input_ids)
        for layer in self.layers:
            x = layer(x)
        x = self.norm_f(x)
        return self.lm_head(x)


def generate(model, input_ids, n_tokens_to_gen, sample=True, top_k=3):
    """mamba-minimal's generate, on token ids: the whole prefix rerun for each new token."""
    model.eval()
    for _ in range(n_tokens_to_gen):
        with torch.no_grad():
            next_token_logits = model(input_ids)[:, -1]
        probs = F.softmax(next_token_logits, dim=-1)
        if top_k is not None:
            (values, indices) = torch.topk(probs, k=top_k)
            probs[probs < values[:, -1, None]] = 0
            probs = probs / probs.sum(axis=1, keepdims=True)
        if sample:
            next_indices = torch.multinomial(probs, num_samples=1)
        else:
            next_indices = torch.argmax(probs, dim=-1)[:, None]
        input_ids = torch.cat([input_ids, next_indices], dim=1)
    model.train()
    return input_ids


# ------------------------------------------------------------------------------------------------------- KAN
class KANLinear(torch.nn.Module):
    def __init__(self, in_features, out_features, grid_size=5, spline_order=3, scale_noise=0.1, scale_base=1.0,
                 scale_spline=1.0, enable_standalone_scale_spline=True, base_activation=torch.nn.SiLU,
                 grid_eps=0.02, grid_range=[-1, 1]):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.grid_size = grid_size
        self.spline_order = spline_order

        h = (grid_range[1] - grid_range[0]) / grid_size
        grid = ((torch.arange(-spline_order, grid_size + spline_order + 1) * h + grid_range[0])
                .expand(in_features, -1).contiguous())
        self.register_buffer("grid", grid)

        self.base_weight = torch.nn.Parameter(torch.Tensor(out_features, in_features))
        self.spline_weight = torch.nn.Parameter(torch.Tensor(out_features, in_features, grid_size + spline_order))
        if enable_standalone_scale_spline:
            self.spline_scaler = torch.nn.Parameter(torch.Tensor(out_features, in_features))

        self.scale_noise = scale_noise
        self.scale_base = scale_base
        self.scale_spline = scale_spline
        self.enable_standalone_scale_spline = enable_standalone_scale_spline
        self.base_activation = base_activation()
        self.grid_eps = grid_eps

        self.reset_parameters()

    def reset_parameters(self):
        torch.nn.init.kaiming_uniform_(self.base_weight, a=math.sqrt(5) * self.scale_base)
        with torch.no_grad():
            noise = ((torch.rand(self.grid_size + 1, self.in_features, self.out_features) - 1 / 2)
                     * self.scale_noise / self.grid_size)
            self.spline_weight.data.copy_(
                (self.scale_spline if not self.enable_standalone_scale_spline else 1.0)
                * self.curve2coeff(self.grid.T[self.spline_order: -self.spline_order], noise))
            if self.enable_standalone_scale_spline:
                torch.nn.init.kaiming_uniform_(self.spline_scaler, a=math.sqrt(5) * self.scale_spline)

    def b_splines(self, x: torch.Tensor):
        assert x.dim() == 2 and x.size(1) == self.in_features
        grid: torch.Tensor = self.grid  # (in_features, grid_size + 2 * spline_order + 1)
        x = x.unsqueeze(-1)
        bases = ((x >= grid[:, :-1]) & (x < grid[:, 1:])).to(x.dtype)
        for k in range(1, self.spline_order + 1):
            bases = ((x - grid[:, : -(k + 1)]) / (grid[:, k:-1] - grid[:, : -(k + 1)]) * bases[:, :, :-1]) + (
                (grid[:, k + 1:] - x) / (grid[:, k + 1:] - grid[:, 1:(-k)]) * bases[:, :, 1:])
        assert bases.size() == (x.size(0), self.in_features, self.grid_size + self.spline_order)
        return bases.contiguous()

    def curve2coeff(self, x: torch.Tensor, y: torch.Tensor):
        assert x.dim() == 2 and x.size(1) == self.in_features
        assert y.size() == (x.size(0), self.in_features, self.out_features)
        A = self.b_splines(x).transpose(0, 1)  # (in_features, batch_size, grid_size + spline_order)
        B = y.transpose(0, 1)  # (in_features, batch_size, out_features)
        solution = torch.linalg.lstsq(A, B).solution  # (in_features, grid_size + spline_order, out_features)
        result = solution.permute(2, 0, 1)  # (out_features, in_features, grid_size + spline_order)
        assert result.size() == (self.out_features, self.in_features, self.grid_size + self.spline_order)
        return result.contiguous()

    @property
    def scaled_spline_weight(self):
        return self.spline_weight * (self.spline_scaler.unsqueeze(-1) if self.enable_standalone_scale_spline
                                     else 1.0)

    def forward(self, x: torch.Tensor):
        assert x.size(-1) == self.in_features
        original_shape = x.shape
        x = x.reshape(-1, self.in_features)
        base_output = F.linear(self.base_activation(x), self.base_weight)
        spline_output = F.linear(self.b_splines(x).view(x.size(0), -1),
                                 self.scaled_spline_weight.view(self.out_features, -1))
        output = base_output + spline_output
        return output.reshape(*original_shape[:-1], self.out_features)

    @torch.no_grad()
    def update_grid(self, x: torch.Tensor, margin=0.01):
        assert x.dim() == 2 and x.size(1) == self.in_features
        batch = x.size(0)

        splines = self.b_splines(x).permute(1, 0, 2)  # (in, batch, coeff)
        orig_coeff = self.scaled_spline_weight.permute(1, 2, 0)  # (in, coeff, out)
        unreduced_spline_output = torch.bmm(splines, orig_coeff).permute(1, 0, 2)  # (batch, in, out)

        # sort each channel individually to collect data distribution
        x_sorted = torch.sort(x, dim=0)[0]
        grid_adaptive = x_sorted[torch.linspace(0, batch - 1, self.grid_size + 1, dtype=torch.int64,
                                                device=x.device)]
        uniform_step = (x_sorted[-1] - x_sorted[0] + 2 * margin) / self.grid_size
        grid_uniform = (torch.arange(self.grid_size + 1, dtype=torch.float32, device=x.device).unsqueeze(1)
                        * uniform_step + x_sorted[0] - margin)

        grid = self.grid_eps * grid_uniform + (1 - self.grid_eps) * grid_adaptive
        grid = torch.concatenate([
            grid[:1] - uniform_step * torch.arange(self.spline_order, 0, -1, device=x.device).unsqueeze(1),
            grid,
            grid[-1:] + uniform_step * torch.arange(1, self.spline_order + 1, device=x.device).unsqueeze(1),
        ], dim=0)

        self.grid.copy_(grid.T)
        self.spline_weight.data.copy_(self.curve2coeff(x, unreduced_spline_output))

    def regularization_loss(self, regularize_activation=1.0, regularize_entropy=1.0):
        l1_fake = self.spline_weight.abs().mean(-1)
        regularization_loss_activation = l1_fake.sum()
        p = l1_fake / regularization_loss_activation
        regularization_loss_entropy = -torch.sum(p * p.log())
        return regularize_activation * regularization_loss_activation + regularize_entropy * regularization_loss_entropy


class KAN(torch.nn.Module):
    def __init__(self, layers_hidden, grid_size=5, spline_order=3):
        super().__init__()
        self.layers = torch.nn.ModuleList()
        for in_features, out_features in zip(layers_hidden, layers_hidden[1:]):
            self.layers.append(KANLinear(in_features, out_features, grid_size=grid_size, spline_order=spline_order))

    def forward(self, x: torch.Tensor, update_grid=False):
        for layer in self.layers:
            if update_grid:
                layer.update_grid(x)
            x = layer(x)
        return x

    def regularization_loss(self, regularize_activation=1.0, regularize_entropy=1.0):
        return sum(layer.regularization_loss(regularize_activation, regularize_entropy) for layer in self.layers)


def target_fn(xy):
    return torch.exp(torch.sin(torch.pi * xy[:, [0]]) + xy[:, [1]] ** 2)


# ------------------------------------------------------------------------------------------------- training
COPY_LEN, SEP, BATCH, MAMBA_STEPS = 3, 0, 16, 30
args = ModelArgs(d_model=16, n_layer=2, vocab_size=7)
mamba = Mamba(args)
torch.set_default_dtype(torch.float64)  # the KAN made, drawn and fitted in float64, as in pykan's tutorials
kan = KAN([2, 5, 1])
torch.set_default_dtype(torch.float32)
share_initial_weights({"mamba": mamba, "kan": kan})
n_params = sum(p.numel() for p in mamba.parameters())
print(f"mamba vocab {args.vocab_size} d_inner {args.d_inner} dt_rank {args.dt_rank} params {n_params}")


def copy_batch(batch_size):
    """[tokens, SEP, tokens] with targets -100 except where the next token is a copied one."""
    tokens = rng.integers(1, 7, (batch_size, COPY_LEN))
    seq = torch.from_numpy(np.concatenate([tokens, np.full((batch_size, 1), SEP), tokens], axis=1))
    inputs, targets = seq[:, :-1], seq[:, 1:].clone()
    targets[:, :COPY_LEN] = -100
    return inputs, targets


no_decay = [p for p in mamba.parameters() if getattr(p, "_no_weight_decay", False)]
decay = [p for p in mamba.parameters() if not getattr(p, "_no_weight_decay", False)]
optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                              lr=1e-2)
print(f"mamba weight decay on {len(decay)} tensors, none on {len(no_decay)}")
for step in range(MAMBA_STEPS):
    inputs, targets = copy_batch(BATCH)
    logits = mamba(inputs)
    loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-100)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(mamba.parameters(), 1.0)
    optimizer.step()
    if step % 5 == 0 or step == MAMBA_STEPS - 1:
        mask = targets != -100
        acc = (logits.argmax(-1)[mask] == targets[mask]).float().mean()
        print(f"mamba step {step} loss {loss.item():.6f} grad norm {norm.item():.6f} copy acc {acc.item():.4f}")

prompts, _ = copy_batch(4)
prompts = prompts[:, :COPY_LEN + 1]
greedy = generate(mamba, prompts, COPY_LEN, sample=False)
print("mamba greedy", greedy[:, COPY_LEN + 1:].tolist(), "prompts", prompts[:, :COPY_LEN].tolist())
sampled = generate(mamba, prompts, COPY_LEN, sample=True, top_k=3)
print("mamba sampled", sampled[:, COPY_LEN + 1:].tolist())
print(f"mamba A_log mean {mamba.layers[0].mixer.A_log.mean().item():.6f} "
      f"D mean {mamba.layers[1].mixer.D.mean().item():.6f} tied {mamba.lm_head.weight is mamba.embedding.weight}")

# a checkpoint in the Hugging Face layout (backbone.-prefixed keys), loaded back as mamba-minimal's from_pretrained does
checkpoint = {(key if key.startswith("lm_head") else "backbone." + key): value
              for key, value in mamba.state_dict().items()}
buffer = io.BytesIO()
torch.save(checkpoint, buffer)
buffer.seek(0)
state_dict = torch.load(buffer, weights_only=True, map_location="cpu")
new_state_dict = {}
for key in state_dict:
    new_key = key.replace("backbone.", "")
    new_state_dict[new_key] = state_dict[key]
restored = Mamba(args)
restored.load_state_dict(new_state_dict)
with torch.no_grad():
    same = torch.equal(restored(prompts), mamba(prompts))
print(f"mamba checkpoint keys {len(state_dict)} restored logits equal {same} "
      f"tied {restored.lm_head.weight is restored.embedding.weight}")


train_xy = torch.from_numpy(rng.uniform(-1.0, 1.0, (64, 2)))
test_xy = torch.from_numpy(rng.uniform(-1.0, 1.0, (32, 2)))
train_f, test_f = target_fn(train_xy), target_fn(test_xy)
print(f"kan grid {tuple(kan.layers[0].grid.shape)} {kan.layers[0].grid.dtype} "
      f"spline weight {tuple(kan.layers[1].spline_weight.shape)} reg {kan.regularization_loss().item():.6f}")

lbfgs = torch.optim.LBFGS(kan.parameters(), lr=1.0, max_iter=5, history_size=10, line_search_fn="strong_wolfe")
for step in range(4):
    if step % 2 == 0:
        with torch.no_grad():
            kan(train_xy, update_grid=True)

    def closure():
        lbfgs.zero_grad()
        mse = F.mse_loss(kan(train_xy), train_f)
        loss = mse + 1e-5 * kan.regularization_loss(1.0, 1.0)
        loss.backward()
        return loss

    loss = lbfgs.step(closure)
    with torch.no_grad():
        test_mse = F.mse_loss(kan(test_xy), test_f)
    print(f"kan lbfgs step {step} loss {loss.item():.8f} test mse {test_mse.item():.8f} "
          f"grids [{kan.layers[0].grid[0, 0].item():.6f}, {kan.layers[0].grid[0, -1].item():.6f}] "
          f"[{kan.layers[1].grid[2, 0].item():.6f}, {kan.layers[1].grid[2, -1].item():.6f}]")

adam = torch.optim.AdamW(kan.parameters(), lr=1e-2, weight_decay=1e-4)
scheduler = torch.optim.lr_scheduler.ExponentialLR(adam, gamma=0.9)
for step in range(20):
    adam.zero_grad()
    loss = F.mse_loss(kan(train_xy), train_f) + 1e-5 * kan.regularization_loss()
    loss.backward()
    adam.step()
    if step % 5 == 4:
        scheduler.step()
        print(f"kan adam step {step} loss {loss.item():.8f} lr {scheduler.get_last_lr()[0]:.6f}")
with torch.no_grad():
    pred = kan(test_xy)
print(f"kan final test mse {F.mse_loss(pred, test_f).item():.8f} max err {(pred - test_f).abs().max().item():.6f} "
      f"reg {kan.regularization_loss().item():.6f}")
xs = torch.linspace(-1, 1, steps=5, dtype=torch.float64)
X, Y = torch.meshgrid(xs, xs, indexing="ij")
mesh = torch.stack([X.flatten(), Y.flatten()], dim=1)
with torch.no_grad():
    surface = kan(mesh).reshape(X.shape)
print(f"kan surface {tuple(surface.shape)} {surface.dtype} corners "
      f"{[round(v, 6) for v in surface[[0, 0, -1, -1], [0, -1, 0, -1]].tolist()]} "
      f"max err {(surface - target_fn(mesh).reshape(X.shape)).abs().max().item():.6f}")
