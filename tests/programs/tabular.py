"""A tabular model in the idioms of Kaggle-style PyTorch code: numeric and categorical columns (embeddings),
BatchNorm, SiLU and dropout, weight decay only on weights, AdamW with OneCycleLR stepped per batch, gradient
accumulation with clipping, two heads (label-smoothed classification, Huber regression), best weights kept by
deepcopy and restored, a checkpoint through BytesIO. `WEIGHTS=path` shares the initial weights between the two
runs (tests/programs/_draws.py shares the draws)."""
import copy
import io

import torch
import torch.nn as nn
import torch.nn.functional as F
from _weights import share_initial_weights
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
N, NUM, CATS, CLASSES = 512, 6, (5, 7), 3
numeric = torch.randn(N, NUM)
categorical = torch.stack([torch.randint(0, c, (N,)) for c in CATS], dim=1)
score = numeric[:, 0] * 1.5 - numeric[:, 1] + 0.5 * categorical[:, 0].float()
label = torch.bucketize(score, torch.tensor([-1.0, 1.0]))
target = score.unsqueeze(1) + 0.1 * torch.randn(N, 1)
split = int(0.8 * N)
train = TensorDataset(numeric[:split], categorical[:split], label[:split], target[:split])
valid = TensorDataset(numeric[split:], categorical[split:], label[split:], target[split:])
loader = DataLoader(train, batch_size=32, shuffle=True, drop_last=True, generator=torch.Generator().manual_seed(1))


class TabularNet(nn.Module):
    def __init__(self, width=64):
        super().__init__()
        self.embeddings = nn.ModuleList([nn.Embedding(c, min(8, (c + 1) // 2)) for c in CATS])
        inputs = NUM + sum(e.embedding_dim for e in self.embeddings)
        self.body = nn.Sequential(nn.Linear(inputs, width, bias=False), nn.BatchNorm1d(width), nn.SiLU(),
                                  nn.Dropout(0.1), nn.Linear(width, width, bias=False), nn.BatchNorm1d(width),
                                  nn.SiLU())
        self.classify = nn.Linear(width, CLASSES)
        self.regress = nn.Linear(width, 1)

    def forward(self, x_num, x_cat):
        embedded = [emb(x_cat[:, i]) for i, emb in enumerate(self.embeddings)]
        h = self.body(torch.cat([x_num, *embedded], dim=1))
        return self.classify(h), self.regress(h)


def init_weights(module):
    if isinstance(module, nn.Linear):
        nn.init.kaiming_uniform_(module.weight, nonlinearity="relu")
        if module.bias is not None:  # a layer before BatchNorm has none: its gradient would be rounding noise
            nn.init.zeros_(module.bias)


model = TabularNet()
model.apply(init_weights)
share_initial_weights({"model": model})
decay = [p for n, p in model.named_parameters() if p.ndim >= 2 and "embeddings" not in n]
no_decay = [p for n, p in model.named_parameters() if p.ndim < 2 or "embeddings" in n]
optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
                              lr=3e-3)
EPOCHS, ACCUMULATE = 4, 2
scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=1e-2, total_steps=EPOCHS * len(loader) // ACCUMULATE)


def evaluate():
    model.eval()
    with torch.inference_mode():
        x_num, x_cat, y, t = valid.tensors
        logits, pred = model(x_num, x_cat)
        accuracy = (logits.argmax(dim=1) == y).float().mean().item()
        mae = F.l1_loss(pred, t).item()
    model.train()
    return accuracy, mae


best, best_state = float("inf"), None
for epoch in range(EPOCHS):
    total = 0.0
    for step, (x_num, x_cat, y, t) in enumerate(loader):
        logits, pred = model(x_num, x_cat)
        loss = F.cross_entropy(logits, y, label_smoothing=0.1) + F.huber_loss(pred, t, delta=0.5)
        (loss / ACCUMULATE).backward()
        total += loss.item()
        if (step + 1) % ACCUMULATE == 0:
            norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            scheduler.step()
    accuracy, mae = evaluate()
    print(f"epoch {epoch}: train loss {total / len(loader):.5f} grad norm {norm.item():.5f} "
          f"lr {scheduler.get_last_lr()[0]:.6f} valid accuracy {accuracy:.4f} mae {mae:.5f}")
    if mae < best:
        best, best_state = mae, copy.deepcopy(model.state_dict())

buffer = io.BytesIO()
torch.save({"model": best_state, "optimizer": optimizer.state_dict()}, buffer)
buffer.seek(0)
checkpoint = torch.load(buffer, weights_only=True)
model.load_state_dict(checkpoint["model"])
optimizer.load_state_dict(checkpoint["optimizer"])
accuracy, mae = evaluate()
print(f"restored best: valid accuracy {accuracy:.4f} mae {mae:.5f} (best {best:.5f})")
print("running mean", [round(v, 5) for v in model.body[1].running_mean[:4].tolist()],
      "batches tracked", model.body[1].num_batches_tracked.item())
top = torch.topk(model.classify.weight.abs().sum(dim=0), k=3)
print("strongest features", top.indices.tolist(), [f"{v:.5f}" for v in top.values.tolist()])
