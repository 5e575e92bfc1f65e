"""A character model trained by a loop that draws from an "infinite" sampler, in the idioms of minGPT's Trainer, run
unchanged under torch and under `python -m retrograd.run`: the usual device line and seeding block (random, NumPy,
torch, torch.cuda, cudnn flags), a Dataset of text windows, `RandomSampler(replacement=True,
num_samples=int(1e10))` feeding a DataLoader (pin_memory, no workers), `next(data_iter)` with StopIteration
restarts, `.to(device)`, `zero_grad(set_to_none=True)`, clip_grad_norm_, AdamW with betas, callbacks, a break
after max_iters, evaluation under `torch.no_grad()` with argmax accuracy. `WEIGHTS=path` shares the initial
weights between the two runs (tests/programs/_draws.py shares the sampler's draws)."""

import os
import random
import time

import numpy as np
import torch
import torch.nn as nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, Dataset

device = "cuda" if torch.cuda.is_available() else "cpu"


def set_seed(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    os.environ["PYTHONHASHSEED"] = str(seed)


class CharDataset(Dataset):
    def __init__(self, data, block_size):
        chars = sorted(list(set(data)))
        self.stoi = {ch: i for i, ch in enumerate(chars)}
        self.itos = {i: ch for i, ch in enumerate(chars)}
        self.vocab_size, self.block_size, self.data = len(chars), block_size, data

    def __len__(self):
        return len(self.data) - self.block_size

    def __getitem__(self, idx):
        chunk = self.data[idx:idx + self.block_size + 1]
        dix = [self.stoi[s] for s in chunk]
        x = torch.tensor(dix[:-1], dtype=torch.long)
        y = torch.tensor(dix[1:], dtype=torch.long)
        return x, y


class MLPLanguageModel(nn.Module):
    """Each position predicts the next character from an embedding of the current one and of the block."""

    def __init__(self, vocab_size, block_size, n_embd=16):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, n_embd)
        self.pos = nn.Parameter(torch.zeros(1, block_size, n_embd))
        self.net = nn.Sequential(nn.LayerNorm(n_embd), nn.Linear(n_embd, 4 * n_embd), nn.GELU(),
                                 nn.Linear(4 * n_embd, vocab_size))

    def forward(self, idx, targets=None):
        b, t = idx.size()
        logits = self.net(self.tok(idx) + self.pos[:, :t, :])
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss


class Trainer:
    def __init__(self, model, train_dataset, max_iters, batch_size=8, learning_rate=5e-3, grad_norm_clip=1.0):
        self.model, self.train_dataset = model, train_dataset
        self.max_iters, self.batch_size = max_iters, batch_size
        self.grad_norm_clip = grad_norm_clip
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate, betas=(0.9, 0.95), weight_decay=0.1)
        self.callbacks = []
        self.device = device
        self.model = self.model.to(self.device)
        print("running on device", self.device)

    def add_callback(self, fn):
        self.callbacks.append(fn)

    def run(self):
        model = self.model
        train_loader = DataLoader(
            self.train_dataset,
            sampler=torch.utils.data.RandomSampler(self.train_dataset, replacement=True, num_samples=int(1e10)),
            shuffle=False, pin_memory=True, batch_size=self.batch_size, num_workers=0)
        model.train()
        self.iter_num = 0
        self.iter_time = time.time()
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
            self.grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), self.grad_norm_clip)
            self.optimizer.step()
            for callback in self.callbacks:
                callback(self)
            self.iter_num += 1
            tnow = time.time()
            self.iter_dt, self.iter_time = tnow - self.iter_time, tnow
            if self.iter_num >= self.max_iters:
                break


def main():
    set_seed(3407)
    text = "to be or not to be that is the question whether tis nobler in the mind to suffer " * 3
    train_dataset = CharDataset(text, block_size=8)
    model = MLPLanguageModel(train_dataset.vocab_size, train_dataset.block_size)
    weights = os.environ.get("WEIGHTS")
    if weights and os.path.exists(weights):
        model.load_state_dict({k: torch.from_numpy(v) for k, v in np.load(weights).items()})
    elif weights:
        np.savez(weights, **{k: v.numpy() for k, v in model.state_dict().items()})
    print("number of parameters:", sum(p.numel() for p in model.parameters()))
    trainer = Trainer(model, train_dataset, max_iters=12)

    def batch_end_callback(trainer):
        print(f"iter {trainer.iter_num}: train loss {trainer.loss.item():.6f} norm {trainer.grad_norm.item():.6f}")

    trainer.add_callback(batch_end_callback)
    trainer.run()
    model.eval()
    with torch.no_grad():
        x, y = train_dataset[0]
        logits, loss = model(x[None].to(device), y[None].to(device))
        accuracy = (logits.argmax(dim=-1) == y).float().mean()
    print(f"eval loss {loss.item():.6f} accuracy {accuracy.item():.4f}")
    print("completion", "".join(train_dataset.itos[int(i)] for i in logits.argmax(dim=-1)[0]))


if __name__ == "__main__":
    main()
