"""minGPT's sorting demo in minGPT's own idioms, run unchanged under torch and under `python -m retrograd.run`: a
`SortDataset` drawing problems with `torch.randint` and `torch.rand`, its targets masking the prompt with -1 for
`F.cross_entropy(..., ignore_index=-1)`, a `Trainer` drawing batches through a `DataLoader` over a
`RandomSampler(replacement=True, num_samples=int(1e10))`, `model.apply(self._init_weights)` with
`torch.nn.init.normal_`/`zeros_`, `configure_optimizers` sorting every parameter into decay / no_decay by walking
`named_modules()` and `named_parameters()` and checking the module's type (Linear weights decay; LayerNorm and
Embedding weights and all biases do not), the sets checked for overlap and coverage, `AdamW` over the two groups,
`model.zero_grad(set_to_none=True)`, `clip_grad_norm_`, and `generate` under `@torch.no_grad()` with top-k filtering
by `torch.topk` and `logits[logits < v[:, [-1]]] = -float('Inf')`, then `torch.multinomial` or `torch.topk(probs,
k=1)`. Prints the loss every iteration and the sorted samples; `WEIGHTS=path` shares the initial weights
(tests/programs/_draws.py shares the drawn problems and batches)."""

# ruff: noqa: UP031 - minGPT's own %-formats

import math
import os
import pickle
import zlib

import numpy as np
import torch
import torch.nn as nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, Dataset


class CfgNode:
    """A lightweight configuration class in the manner of yacs."""

    def __init__(self, **kwargs):
        self.__dict__.update(kwargs)

    def merge_from_dict(self, d):
        self.__dict__.update(d)


class SortDataset(Dataset):
    """Problems of sorting a few digits: 0 0 2 1 0 1 -> 0 0 0 1 1 2, the prompt's targets masked with -1."""

    def __init__(self, split, length=6, num_digits=3):
        assert split in {"train", "test"}
        self.split, self.length, self.num_digits = split, length, num_digits

    def __len__(self):
        return 10000

    def get_vocab_size(self):
        return self.num_digits

    def get_block_size(self):
        return self.length * 2 - 1

    def __getitem__(self, idx):
        # draw problems until one of this split comes up; many repeated digits are made rarer
        while True:
            inp = torch.randint(self.num_digits, size=(self.length,), dtype=torch.long)
            if torch.rand(1).item() < 0.5:
                if inp.unique().nelement() > self.length // 2:
                    continue
            # minGPT hashes with hash(), which Python salts per process; crc32 gives both runs the same split
            h = zlib.crc32(pickle.dumps(inp.tolist()))
            inp_split = "test" if h % 4 == 0 else "train"
            if inp_split == self.split:
                break
        sol = torch.sort(inp)[0]
        cat = torch.cat((inp, sol), dim=0)
        x = cat[:-1].clone()
        y = cat[1:].clone()
        y[:self.length - 1] = -1
        return x, y


class NewGELU(nn.Module):
    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class CausalSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        assert config.n_embd % config.n_head == 0
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd)
        self.attn_dropout = nn.Dropout(config.attn_pdrop)
        self.resid_dropout = nn.Dropout(config.resid_pdrop)
        self.register_buffer("bias", torch.tril(torch.ones(config.block_size, config.block_size))
                             .view(1, 1, config.block_size, config.block_size))
        self.n_head, self.n_embd = config.n_head, config.n_embd

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        att = self.attn_dropout(att)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd)
        self.mlp = nn.ModuleDict(dict(c_fc=nn.Linear(config.n_embd, 4 * config.n_embd),
                                      c_proj=nn.Linear(4 * config.n_embd, config.n_embd),
                                      act=NewGELU(), dropout=nn.Dropout(config.resid_pdrop)))
        m = self.mlp
        self.mlpf = lambda x: m.dropout(m.c_proj(m.act(m.c_fc(x))))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlpf(self.ln_2(x))


class GPT(nn.Module):
    @staticmethod
    def get_default_config():
        return CfgNode(model_type=None, n_layer=2, n_head=2, n_embd=24, vocab_size=None, block_size=None,
                       embd_pdrop=0.0, resid_pdrop=0.0, attn_pdrop=0.0)

    def __init__(self, config):
        super().__init__()
        assert config.vocab_size is not None and config.block_size is not None
        self.block_size = config.block_size
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            wpe=nn.Embedding(config.block_size, config.n_embd),
            drop=nn.Dropout(config.embd_pdrop),
            h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
            ln_f=nn.LayerNorm(config.n_embd),
        ))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():
            if pn.endswith("c_proj.weight"):
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))
        n_params = sum(p.numel() for p in self.transformer.parameters())
        print("number of parameters: %.2fM" % (n_params / 1e6,))

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
        elif isinstance(module, nn.LayerNorm):
            torch.nn.init.zeros_(module.bias)
            torch.nn.init.ones_(module.weight)

    def configure_optimizers(self, train_config):
        decay, no_decay = set(), set()
        whitelist_weight_modules = (torch.nn.Linear, )
        blacklist_weight_modules = (torch.nn.LayerNorm, torch.nn.Embedding)
        for mn, m in self.named_modules():
            for pn, _p in m.named_parameters():
                fpn = "%s.%s" % (mn, pn) if mn else pn
                # named_modules and named_parameters are recursive: each parameter is seen from every parent too,
                # so it is sorted by the type of the module whose own attribute it is
                if pn.endswith("bias"):
                    no_decay.add(fpn)
                elif pn.endswith("weight") and isinstance(m, whitelist_weight_modules):
                    decay.add(fpn)
                elif pn.endswith("weight") and isinstance(m, blacklist_weight_modules):
                    no_decay.add(fpn)
        param_dict = {pn: p for pn, p in self.named_parameters()}
        inter_params = decay & no_decay
        union_params = decay | no_decay
        assert len(inter_params) == 0, "parameters %s made it into both decay/no_decay sets!" % (str(inter_params),)
        assert len(param_dict.keys() - union_params) == 0, "parameters %s were not separated into either set!" \
            % (str(param_dict.keys() - union_params),)
        optim_groups = [
            {"params": [param_dict[pn] for pn in sorted(list(decay))], "weight_decay": train_config.weight_decay},
            {"params": [param_dict[pn] for pn in sorted(list(no_decay))], "weight_decay": 0.0},
        ]
        print("decay", len(decay), "no_decay", len(no_decay))
        return torch.optim.AdamW(optim_groups, lr=train_config.learning_rate, betas=train_config.betas)

    def forward(self, idx, targets=None):
        device = idx.device
        b, t = idx.size()
        assert t <= self.block_size, f"Cannot forward sequence of length {t}, block size is only {self.block_size}"
        pos = torch.arange(0, t, dtype=torch.long, device=device).unsqueeze(0)
        tok_emb = self.transformer.wte(idx)
        pos_emb = self.transformer.wpe(pos)
        x = self.transformer.drop(tok_emb + pos_emb)
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        logits = self.lm_head(x)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, do_sample=False, top_k=None):
        for _ in range(max_new_tokens):
            idx_cond = idx if idx.size(1) <= self.block_size else idx[:, -self.block_size:]
            logits, _ = self(idx_cond)
            logits = logits[:, -1, :] / temperature
            if top_k is not None:
                v, _ = torch.topk(logits, top_k)
                logits[logits < v[:, [-1]]] = -float("Inf")
            probs = F.softmax(logits, dim=-1)
            if do_sample:
                idx_next = torch.multinomial(probs, num_samples=1)
            else:
                _, idx_next = torch.topk(probs, k=1, dim=-1)
            idx = torch.cat((idx, idx_next), dim=1)
        return idx


class Trainer:
    @staticmethod
    def get_default_config():
        return CfgNode(device="auto", num_workers=0, max_iters=None, batch_size=16, learning_rate=5e-3,
                       betas=(0.9, 0.95), weight_decay=0.1, grad_norm_clip=1.0)

    def __init__(self, config, model, train_dataset):
        self.config, self.model, self.train_dataset = config, model, train_dataset
        self.device = "cuda" if config.device == "auto" and torch.cuda.is_available() else "cpu"
        self.model = self.model.to(self.device)
        self.iter_num = 0

    def run(self):
        model, config = self.model, self.config
        self.optimizer = model.configure_optimizers(config)
        train_loader = DataLoader(
            self.train_dataset,
            sampler=torch.utils.data.RandomSampler(self.train_dataset, replacement=True, num_samples=int(1e10)),
            shuffle=False, pin_memory=False, batch_size=config.batch_size, num_workers=config.num_workers)
        model.train()
        data_iter = iter(train_loader)
        while True:
            try:
                batch = next(data_iter)
            except StopIteration:
                data_iter = iter(train_loader)
                batch = next(data_iter)
            batch = [t.to(self.device) for t in batch]
            x, y = batch
            logits, self.loss = model(x, y)
            model.zero_grad(set_to_none=True)
            self.loss.backward()
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_norm_clip)
            self.optimizer.step()
            print(f"iter {self.iter_num}: train loss {self.loss.item():.5f} norm {norm.item():.5f}")
            self.iter_num += 1
            if config.max_iters is not None and self.iter_num >= config.max_iters:
                break


torch.manual_seed(3407)
train_dataset, test_dataset = SortDataset("train"), SortDataset("test")
model_config = GPT.get_default_config()
model_config.vocab_size = train_dataset.get_vocab_size()
model_config.block_size = train_dataset.get_block_size()
model = GPT(model_config)
weights = os.environ.get("WEIGHTS")
if weights and os.path.exists(weights):
    model.load_state_dict({k: torch.from_numpy(v) for k, v in np.load(weights).items()})
elif weights:
    np.savez(weights, **{k: v.numpy() for k, v in model.state_dict().items()})
train_config = Trainer.get_default_config()
train_config.merge_from_dict({"max_iters": 12})
trainer = Trainer(train_config, model, train_dataset)
trainer.run()

model.eval()
n = train_dataset.length
inp = torch.tensor([[0, 2, 1, 0, 2, 1], [2, 2, 1, 0, 0, 0]], dtype=torch.long)
with torch.no_grad():
    cat = model.generate(inp, n, do_sample=False)
print("greedy", cat[:, n:].tolist(), "correct", (cat[:, n:] == torch.sort(inp)[0]).all(1).tolist())
cat = model.generate(inp, n, do_sample=True, top_k=2)
print("sampled top-2", cat[:, n:].tolist())
