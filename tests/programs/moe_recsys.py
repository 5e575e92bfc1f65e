"""A tiny mixture-of-experts transformer and three implicit-feedback recommenders, run unchanged under torch and
under `python -m retrograd.run`. Part 1 follows public MoE code (transformers' `MixtralSparseMoeBlock` and
`load_balancing_loss_func`, nanoGPT-MoE, the Switch Transformer / GShard tutorials and ST-MoE's router z-loss): a
router `nn.Linear(d, n_experts, bias=False)`, `F.softmax(router_logits, dim=1, dtype=torch.float)`, `torch.topk`
of the routing weights renormalised in place by `/=` and cast back by `.to(hidden_states.dtype)`, the expert mask
`F.one_hot(selected_experts, num_classes=...).permute(2, 1, 0)`, the experts hit found by
`torch.greater(mask.sum(dim=(-1, -2)), 0).nonzero()` and iterated as one-element tensors that index the
`nn.ModuleList`, `torch.where(expert_mask[i].squeeze(0))`, `hidden[None, top_x].reshape(-1, d)`, SwiGLU experts
(`w2(F.silu(w1(x)) * w3(x))`) scaled by `routing_weights[top_x, idx, None]` and summed by
`final.index_add_(0, top_x, out.to(final.dtype))`; a second, Switch-style top-1 layer with an expert capacity
(`torch.argmax`, positions by `torch.cumsum(mask, dim=0) - 1`, overflow tokens dropped by `torch.lt(position,
capacity)`, the dispatch by `torch.einsum`); the load-balancing loss over `torch.cat` of the layers' router logits
(`tokens_per_expert = torch.mean(expert_mask.float(), dim=0)`, `router_prob_per_expert = torch.mean(routing_weights,
dim=0)`) and the z-loss `torch.logsumexp(router_logits, dim=-1) ** 2`; a third layer with nanoGPT-MoE's noisy top-k
router (`torch.randn_like(logits) * F.softplus(noise_logits)` in training, `torch.full_like(logits,
float("-inf")).scatter(-1, indices, top_k_logits)`) whose experts add their outputs back by `final_output[expert_mask]
+= ...`; causal attention by `F.scaled_dot_product_attention(is_causal=True)` between `nn.RMSNorm`s; trained on a toy
next-token task (each sequence counts up by a stride its first token names; batches by `torch.randint`) with AdamW
and `clip_grad_norm_`. Part 2 follows public matrix-factorisation / BPR / NCF code: a synthetic user-item matrix from
NumPy's seeded generator with one held-out item per user (leave-one-out); BPR matrix factorisation with
`nn.Embedding(n, d, sparse=True)` tables and `optim.SGD` (not torch's `SparseAdam`: retrograd's gradients are
always dense, so it refuses them), and again with dense tables under `optim.Adagrad`, both initialised by
`nn.init.normal_(std=0.01)`, scored by `(u * i).sum(dim=-1)` against negatives drawn by
`torch.randint`, loss `-F.logsigmoid(pos_score - neg_score).mean()`; NCF (a GMF branch beside an MLP tower on
`torch.cat([u, i], dim=-1)`) under `F.binary_cross_entropy_with_logits` and Adam; evaluation under
`torch.no_grad()` by `user_emb @ item_emb.T` (NCF: every pair by `repeat_interleave` / `repeat`), training items
masked by `scores[seen] = -float("inf")`, `torch.topk` and hit-rate@k / NDCG@k with `torch.log2`. Prints the losses
and metrics step by step; `WEIGHTS=path` shares the initial weights (tests/programs/_draws.py shares the batches
and negatives)."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from _weights import share_initial_weights

torch.manual_seed(0)

# ---- part 1: a mixture-of-experts transformer --------------------------------------------------------------------

VOCAB, SEQ_LEN, DIM, N_HEADS = 16, 12, 32, 4
N_EXPERTS, TOP_K, FFN_DIM = 4, 2, 48
AUX_COEF, Z_COEF, CAPACITY_FACTOR = 0.01, 0.001, 1.25
MOE_STEPS, MOE_BATCH = 24, 16


class ExpertMLP(nn.Module):
    """Mixtral's `MixtralBlockSparseTop2MLP`: a SwiGLU feed-forward."""

    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, hidden_states):
        return self.w2(F.silu(self.w1(hidden_states)) * self.w3(hidden_states))


class SparseMoeBlock(nn.Module):
    """Top-k routing as Mixtral's sparse MoE block: each expert runs only on the tokens routed to it."""

    def __init__(self, dim, hidden, num_experts, top_k):
        super().__init__()
        self.hidden_dim, self.num_experts, self.top_k = dim, num_experts, top_k
        self.gate = nn.Linear(dim, num_experts, bias=False)
        self.experts = nn.ModuleList([ExpertMLP(dim, hidden) for _ in range(num_experts)])

    def forward(self, hidden_states):
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        hidden_states = hidden_states.view(-1, hidden_dim)
        router_logits = self.gate(hidden_states)
        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
        routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
        routing_weights = routing_weights.to(hidden_states.dtype)
        final_hidden_states = torch.zeros((batch_size * sequence_length, hidden_dim), dtype=hidden_states.dtype,
                                          device=hidden_states.device)
        expert_mask = F.one_hot(selected_experts, num_classes=self.num_experts).permute(2, 1, 0)
        expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
        for expert_idx in expert_hit:
            expert_layer = self.experts[expert_idx]
            idx, top_x = torch.where(expert_mask[expert_idx].squeeze(0))
            current_state = hidden_states[None, top_x].reshape(-1, hidden_dim)
            current_hidden_states = expert_layer(current_state) * routing_weights[top_x, idx, None]
            final_hidden_states.index_add_(0, top_x, current_hidden_states.to(hidden_states.dtype))
        final_hidden_states = final_hidden_states.reshape(batch_size, sequence_length, hidden_dim)
        return final_hidden_states, router_logits


class SwitchMoeBlock(nn.Module):
    """Switch Transformer top-1 routing with an expert capacity, GShard's dispatch/combine tensors by einsum."""

    def __init__(self, dim, hidden, num_experts, capacity_factor):
        super().__init__()
        self.num_experts, self.capacity_factor = num_experts, capacity_factor
        self.router = nn.Linear(dim, num_experts, bias=False)
        self.experts = nn.ModuleList([ExpertMLP(dim, hidden) for _ in range(num_experts)])

    def forward(self, x):
        b, t, d = x.shape
        tokens = x.reshape(-1, d)
        num_tokens = tokens.size(0)
        capacity = int(self.capacity_factor * num_tokens / self.num_experts)
        router_logits = self.router(tokens)
        router_probs = torch.softmax(router_logits, dim=-1)
        expert_index = torch.argmax(router_probs, dim=-1)
        expert_mask = F.one_hot(expert_index, num_classes=self.num_experts)
        position_in_expert = torch.cumsum(expert_mask, dim=0) - 1
        expert_mask = expert_mask * torch.lt(position_in_expert, capacity)
        gate = (router_probs * expert_mask).sum(dim=-1, keepdim=True)
        slot = (position_in_expert * expert_mask).sum(dim=-1)
        dispatch = F.one_hot(slot, capacity)[:, None, :] * expert_mask[..., None]
        expert_inputs = torch.einsum("nec,nd->ecd", dispatch.float(), tokens)
        expert_outputs = torch.stack([expert(expert_inputs[e]) for e, expert in enumerate(self.experts)])
        out = torch.einsum("nec,ecd->nd", dispatch.float(), expert_outputs) * gate
        dropped = num_tokens - int(expert_mask.sum())
        return out.reshape(b, t, d), router_logits, dropped


class NoisyTopkRouter(nn.Module):
    """nanoGPT-MoE's router: top-k of noisy logits, the others set to -inf by `scatter` before the softmax."""

    def __init__(self, dim, num_experts, top_k):
        super().__init__()
        self.top_k = top_k
        self.topkroute_linear = nn.Linear(dim, num_experts)
        self.noise_linear = nn.Linear(dim, num_experts)

    def forward(self, mh_output):
        logits = self.topkroute_linear(mh_output)
        if self.training:
            noise = torch.randn_like(logits) * F.softplus(self.noise_linear(mh_output))
            logits = logits + noise
        top_k_logits, indices = logits.topk(self.top_k, dim=-1)
        zeros = torch.full_like(logits, float("-inf"))
        sparse_logits = zeros.scatter(-1, indices, top_k_logits)
        return F.softmax(sparse_logits, dim=-1), indices, logits


class NoisySparseMoE(nn.Module):
    """nanoGPT-MoE's layer: per expert a boolean token mask, outputs added back by masked `+=`."""

    def __init__(self, dim, hidden, num_experts, top_k):
        super().__init__()
        self.router = NoisyTopkRouter(dim, num_experts, top_k)
        self.experts = nn.ModuleList([ExpertMLP(dim, hidden) for _ in range(num_experts)])

    def forward(self, x):
        gating_output, indices, logits = self.router(x)
        final_output = torch.zeros_like(x)
        flat_x = x.view(-1, x.size(-1))
        flat_gating_output = gating_output.view(-1, gating_output.size(-1))
        for i, expert in enumerate(self.experts):
            expert_mask = (indices == i).any(dim=-1)
            flat_mask = expert_mask.view(-1)
            if flat_mask.any():
                expert_output = expert(flat_x[flat_mask])
                gating_scores = flat_gating_output[flat_mask, i].unsqueeze(1)
                final_output[expert_mask] += expert_output * gating_scores
        return final_output, logits.view(-1, logits.size(-1))


class Block(nn.Module):
    def __init__(self, moe):
        super().__init__()
        self.attn_norm = nn.RMSNorm(DIM, eps=1e-6)
        self.qkv = nn.Linear(DIM, 3 * DIM, bias=False)
        self.proj = nn.Linear(DIM, DIM, bias=False)
        self.moe_norm = nn.RMSNorm(DIM, eps=1e-6)
        self.moe = moe

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.attn_norm(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, N_HEADS, d // N_HEADS).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).contiguous().view(b, t, d))
        moe_out, router_logits, *rest = self.moe(self.moe_norm(x))
        return x + moe_out, router_logits, rest


class MoeLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok_emb = nn.Embedding(VOCAB, DIM)
        self.pos_emb = nn.Embedding(SEQ_LEN, DIM)
        self.blocks = nn.ModuleList([Block(SparseMoeBlock(DIM, FFN_DIM, N_EXPERTS, TOP_K)),
                                     Block(SwitchMoeBlock(DIM, FFN_DIM, N_EXPERTS, CAPACITY_FACTOR)),
                                     Block(NoisySparseMoE(DIM, FFN_DIM, N_EXPERTS, TOP_K))])
        self.norm = nn.RMSNorm(DIM, eps=1e-6)
        self.lm_head = nn.Linear(DIM, VOCAB, bias=False)

    def forward(self, idx):
        x = self.tok_emb(idx) + self.pos_emb(torch.arange(idx.size(1), device=idx.device))
        all_router_logits, dropped = [], 0
        for block in self.blocks:
            x, router_logits, rest = block(x)
            all_router_logits.append(router_logits)
            dropped += rest[0] if rest else 0
        return self.lm_head(self.norm(x)), tuple(all_router_logits), dropped


def load_balancing_loss_func(gate_logits, num_experts, top_k):
    """Switch Transformer's auxiliary loss as transformers computes it over the layers' concatenated logits."""
    concatenated_gate_logits = torch.cat(list(gate_logits), dim=0)
    routing_weights = F.softmax(concatenated_gate_logits, dim=-1)
    _, selected_experts = torch.topk(routing_weights, top_k, dim=-1)
    expert_mask = F.one_hot(selected_experts, num_experts)
    tokens_per_expert = torch.mean(expert_mask.float(), dim=0)
    router_prob_per_expert = torch.mean(routing_weights, dim=0)
    overall_loss = torch.sum(tokens_per_expert * router_prob_per_expert.unsqueeze(0))
    return overall_loss * num_experts, tokens_per_expert


def router_z_loss(gate_logits):
    """ST-MoE's z-loss: keeps the router logits small."""
    return sum(torch.mean(torch.logsumexp(logits, dim=-1) ** 2) for logits in gate_logits) / len(gate_logits)


def get_batch(batch_size):
    """Sequences counting up (mod VOCAB) by a stride 1-3 that the first token names (its value mod 3)."""
    first = torch.randint(0, VOCAB, (batch_size, 1))
    stride = first % 3 + 1
    seq = (first + stride * torch.arange(SEQ_LEN + 1)) % VOCAB
    return seq[:, :-1], seq[:, 1:]


model = MoeLM()
for name, p in model.named_parameters():
    if p.dim() >= 2:
        nn.init.normal_(p, std=0.05)

# ---- part 2: recommenders ----------------------------------------------------------------------------------------

N_USERS, N_ITEMS, EMB_DIM, TOP_N = 40, 60, 16, 10


class BPRMF(nn.Module):
    def __init__(self, n_users, n_items, dim, sparse):
        super().__init__()
        self.user_emb = nn.Embedding(n_users, dim, sparse=sparse)
        self.item_emb = nn.Embedding(n_items, dim, sparse=sparse)
        nn.init.normal_(self.user_emb.weight, std=0.01)
        nn.init.normal_(self.item_emb.weight, std=0.01)

    def forward(self, users, pos_items, neg_items):
        u = self.user_emb(users)
        pos_score = (u * self.item_emb(pos_items)).sum(dim=-1)
        neg_score = (u * self.item_emb(neg_items)).sum(dim=-1)
        return pos_score, neg_score

    def all_scores(self):
        return self.user_emb.weight @ self.item_emb.weight.T


class NCF(nn.Module):
    """Neural collaborative filtering: GMF and an MLP tower on the concatenated embeddings, fused by a linear."""

    def __init__(self, n_users, n_items, dim, layers=(32, 16, 8)):
        super().__init__()
        self.user_gmf, self.item_gmf = nn.Embedding(n_users, dim), nn.Embedding(n_items, dim)
        self.user_mlp, self.item_mlp = nn.Embedding(n_users, dim), nn.Embedding(n_items, dim)
        tower, width = [], 2 * dim
        for size in layers:
            tower += [nn.Linear(width, size), nn.ReLU()]
            width = size
        self.mlp = nn.Sequential(*tower)
        self.predict = nn.Linear(dim + width, 1)
        for emb in (self.user_gmf, self.item_gmf, self.user_mlp, self.item_mlp):
            nn.init.normal_(emb.weight, std=0.01)

    def forward(self, users, items):
        gmf = self.user_gmf(users) * self.item_gmf(items)
        mlp = self.mlp(torch.cat([self.user_mlp(users), self.item_mlp(items)], dim=-1))
        return self.predict(torch.cat([gmf, mlp], dim=-1)).squeeze(-1)

    def all_scores(self):
        users = torch.arange(N_USERS).repeat_interleave(N_ITEMS)
        items = torch.arange(N_ITEMS).repeat(N_USERS)
        return self(users, items).view(N_USERS, N_ITEMS)


def make_interactions(seed):
    """Each user's 8 favourite items under hidden factors; the last one is held out for evaluation."""
    rng = np.random.default_rng(seed)
    affinity = rng.normal(size=(N_USERS, 4)) @ rng.normal(size=(4, N_ITEMS)) + rng.gumbel(size=(N_USERS, N_ITEMS))
    liked = np.argsort(-affinity, axis=1)[:, :8]
    train = np.zeros((N_USERS, N_ITEMS), dtype=bool)
    train[np.arange(N_USERS)[:, None], liked[:, :-1]] = True
    return torch.from_numpy(train), torch.from_numpy(liked[:, -1].copy())


train_matrix, test_items = make_interactions(0)
pairs = train_matrix.nonzero()
print("interactions", tuple(pairs.shape), "density", f"{train_matrix.float().mean().item():.6f}")

mf_sparse = BPRMF(N_USERS, N_ITEMS, EMB_DIM, sparse=True)
mf_dense = BPRMF(N_USERS, N_ITEMS, EMB_DIM, sparse=False)
ncf = NCF(N_USERS, N_ITEMS, 8)
share_initial_weights({"moe": model, "mf_sparse": mf_sparse, "mf_dense": mf_dense, "ncf": ncf})
print(mf_sparse)

# ---- part 1: training --------------------------------------------------------------------------------------------

print(model.blocks[0].moe.gate, model.blocks[1].moe.experts[0])
print(f"parameters: {sum(p.numel() for p in model.parameters())}")
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, betas=(0.9, 0.95), weight_decay=0.01)
for step in range(MOE_STEPS):
    x, y = get_batch(MOE_BATCH)
    logits, router_logits, dropped = model(x)
    ce = F.cross_entropy(logits.view(-1, VOCAB), y.reshape(-1))
    aux, tokens_per_expert = load_balancing_loss_func(router_logits, N_EXPERTS, TOP_K)
    z = router_z_loss(router_logits)
    loss = ce + AUX_COEF * aux + Z_COEF * z
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    if step % 4 == 0 or step == MOE_STEPS - 1:
        load = " ".join(f"{f:.4f}" for f in tokens_per_expert.sum(dim=0).tolist())
        print(f"moe step {step} loss {loss.item():.6f} ce {ce.item():.6f} aux {aux.item():.6f} z {z.item():.6f} "
              f"norm {norm.item():.6f} dropped {dropped} load [{load}]")

model.eval()
with torch.no_grad():
    x, y = get_batch(64)
    logits, router_logits, dropped = model(x)
    accuracy = (logits.argmax(-1)[:, 1:] == y[:, 1:]).float().mean()
    first_layer = F.softmax(router_logits[0], dim=-1, dtype=torch.float)
    print(f"moe eval ce {F.cross_entropy(logits.view(-1, VOCAB), y.reshape(-1)).item():.6f} "
          f"accuracy {accuracy.item():.6f} router entropy "
          f"{-(first_layer * first_layer.log()).sum(-1).mean().item():.6f}")

# ---- part 2: training --------------------------------------------------------------------------------------------


def evaluate(name, scores, k=TOP_N):
    """Leave-one-out hit-rate@k and NDCG@k with the training items masked out."""
    scores = scores.clone()
    scores[train_matrix] = -float("inf")
    _, top = torch.topk(scores, k, dim=1)
    hits = top == test_items[:, None]
    hit_rate = hits.any(dim=1).float().mean()
    ranks = torch.arange(k, dtype=torch.float32)
    ndcg = (hits.float() / torch.log2(ranks + 2)).sum(dim=1).mean()
    print(f"{name} HR@{k} {hit_rate.item():.6f} NDCG@{k} {ndcg.item():.6f}")


def sample_bpr(batch_size):
    """(user, positive, negative) triples: random training pairs, negatives uniformly from all items."""
    picked = pairs[torch.randint(0, pairs.size(0), (batch_size,))]
    users, pos_items = picked[:, 0], picked[:, 1]
    neg_items = torch.randint(0, N_ITEMS, (batch_size,))
    return users, pos_items, neg_items


def train_bpr(name, mf, optimizer, epochs, batch_size=64):
    for epoch in range(epochs):
        total = 0.0
        for _ in range(pairs.size(0) // batch_size):
            users, pos_items, neg_items = sample_bpr(batch_size)
            pos_score, neg_score = mf(users, pos_items, neg_items)
            loss = -F.logsigmoid(pos_score - neg_score).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item()
        print(f"{name} epoch {epoch} loss {total / (pairs.size(0) // batch_size):.6f}")
        with torch.no_grad():
            evaluate(name, mf.all_scores())


with torch.no_grad():
    evaluate("popularity", train_matrix.float().sum(dim=0).expand(N_USERS, -1) + torch.arange(N_ITEMS) * 1e-3)
train_bpr("mf-sparse", mf_sparse, torch.optim.SGD(mf_sparse.parameters(), lr=30.0), epochs=4)
train_bpr("mf-adagrad", mf_dense, torch.optim.Adagrad(mf_dense.parameters(), lr=0.1), epochs=4)

optimizer = torch.optim.Adam(ncf.parameters(), lr=0.01)
for epoch in range(4):
    total, batches = 0.0, pairs.size(0) // 64
    for _ in range(batches):
        users, pos_items, neg_items = sample_bpr(64)
        logits = ncf(torch.cat([users, users]), torch.cat([pos_items, neg_items]))
        labels = torch.cat([torch.ones(64), torch.zeros(64)])
        loss = F.binary_cross_entropy_with_logits(logits, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
    print(f"ncf epoch {epoch} loss {total / batches:.6f}")
    ncf.eval()
    with torch.no_grad():
        evaluate("ncf", ncf.all_scores())
    ncf.train()
