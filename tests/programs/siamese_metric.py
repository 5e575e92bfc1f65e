"""Metric learning on small synthetic clusters, trained four ways, in the idioms of public metric-learning code (the
Siamese-network-with-contrastive-loss tutorials, FaceNet-style triplet loss with batch-hard mining, the losses of
pytorch-metric-learning written out by hand, ArcFace heads), run unchanged under torch and under
`python -m retrograd.run`: 8-d points of four classes around fixed centres from NumPy's seeded generator, an
embedding MLP ending in `F.normalize(x, p=2, dim=1)`. A hand-written contrastive loss on pairs
(`F.pairwise_distance`, `(1 - y) * d.pow(2) + y * torch.clamp(margin - d, min=0.0).pow(2)`); `nn.TripletMarginLoss
(margin=0.2, p=2)` on fixed triplets and `nn.CosineEmbeddingLoss` on the pairs' +1/-1 targets; batch-hard triplet
mining with `torch.cdist(emb, emb)`, a same-label mask from `labels.unsqueeze(0) == labels.unsqueeze(1)` less
`torch.eye(n, dtype=torch.bool)`, `masked_fill(~mask, 0).max(dim=1)` for the hardest positive and
`dist.masked_fill(mask, float("inf")).min(dim=1)` for the hardest negative; an ArcFace head (`F.linear(F.normalize(x),
F.normalize(self.weight))`, `torch.acos(cos.clamp(-1 + 1e-7, 1 - 1e-7))`, `torch.cos(theta + m)` at the target picked
by `F.one_hot`, scale s, `F.cross_entropy`). SGD with momentum under `CosineAnnealingLR`. Evaluation: recall@1 on a
held-out set by `torch.topk(-dist, k=2)` (the first neighbour is the point itself) and a 3-NN vote by `torch.mode`.
Prints the losses every other step and the recalls; `WEIGHTS=path` shares the initial weights."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from _weights import share_initial_weights

torch.manual_seed(0)
DIM, EMB, CLASSES, PER_CLASS, STEPS = 8, 4, 4, 8, 8

rng = np.random.default_rng(0)
centres = rng.normal(0.0, 1.0, (CLASSES, DIM))


def make_split(per_class):
    """per_class noisy points around each centre, with their labels, as float32 / long tensors."""
    x = np.concatenate([c + 0.6 * rng.normal(0.0, 1.0, (per_class, DIM)) for c in centres]).astype(np.float32)
    y = np.repeat(np.arange(CLASSES), per_class)
    return torch.from_numpy(x), torch.from_numpy(y).long()


train_x, train_y = make_split(PER_CLASS)
test_x, test_y = make_split(6)
n = len(train_y)
# fixed pairs (label 0 = similar, 1 = dissimilar) and triplets (anchor, positive, negative)
first, second = rng.integers(0, n, 48), rng.integers(0, n, 48)
pair_y = (train_y[torch.from_numpy(first)] != train_y[torch.from_numpy(second)]).float()
anchors = rng.integers(0, n, 32)
positives = np.array([rng.choice(np.flatnonzero(train_y.numpy() == train_y[a].item())) for a in anchors])
negatives = np.array([rng.choice(np.flatnonzero(train_y.numpy() != train_y[a].item())) for a in anchors])


class EmbeddingNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(DIM, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, EMB))

    def forward(self, x):
        return F.normalize(self.net(x), p=2, dim=1)


class ArcFace(nn.Module):
    """Additive angular margin: cos(theta + m) at the target class, scaled by s, then cross-entropy."""

    def __init__(self, in_features, out_features, s=8.0, m=0.3):
        super().__init__()
        self.s, self.m = s, m
        self.weight = nn.Parameter(torch.empty(out_features, in_features))
        nn.init.xavier_uniform_(self.weight)

    def forward(self, x, labels):
        cos = F.linear(F.normalize(x), F.normalize(self.weight))
        theta = torch.acos(cos.clamp(-1 + 1e-7, 1 - 1e-7))
        target = torch.cos(theta + self.m)
        one_hot = F.one_hot(labels, num_classes=cos.size(1)).float()
        logits = self.s * (one_hot * target + (1 - one_hot) * cos)
        return F.cross_entropy(logits, labels)


def contrastive_loss(a, b, y, margin=1.0):
    d = F.pairwise_distance(a, b)
    return torch.mean((1 - y) * d.pow(2) + y * torch.clamp(margin - d, min=0.0).pow(2)) / 2


def batch_hard_triplet_loss(emb, labels, margin=0.2):
    dist = torch.cdist(emb, emb)
    same = labels.unsqueeze(0) == labels.unsqueeze(1)
    pos_mask = same & ~torch.eye(len(labels), dtype=torch.bool)
    hardest_pos = dist.masked_fill(~pos_mask, 0).max(dim=1).values
    hardest_neg = dist.masked_fill(same, float("inf")).min(dim=1).values
    return F.relu(hardest_pos - hardest_neg + margin).mean(), hardest_pos.mean(), hardest_neg.mean()


def evaluate(model, name):
    model.eval()
    with torch.no_grad():
        emb = model(test_x)
        dist = torch.cdist(emb, emb)
        _, idx = torch.topk(-dist, k=2, dim=1)
        recall = (test_y[idx[:, 1]] == test_y).float().mean()
        _, knn = torch.topk(-dist, k=4, dim=1)
        vote = torch.mode(test_y[knn[:, 1:]], dim=1).values
        knn_acc = (vote == test_y).float().mean()
    model.train()
    print(f"{name}: recall@1 {recall.item():.4f} knn {knn_acc.item():.4f} "
          f"mean_dist {dist.mean().item():.6f}")


models = {name: EmbeddingNet() for name in ("contrastive", "triplet", "batch_hard", "arcface")}
head = ArcFace(EMB, CLASSES)
share_initial_weights({**models, "head": head})
triplet = nn.TripletMarginLoss(margin=0.2, p=2)
cosine = nn.CosineEmbeddingLoss(margin=0.1)

for name, model in models.items():
    params = list(model.parameters()) + (list(head.parameters()) if name == "arcface" else [])
    opt = torch.optim.SGD(params, lr=0.1, momentum=0.9)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=STEPS)
    for step in range(STEPS):
        emb = model(train_x)
        if name == "contrastive":
            a, b = emb[first], emb[second]
            loss = contrastive_loss(a, b, pair_y) + cosine(a, b, 1 - 2 * pair_y)
            extra = f"cos_sim {F.cosine_similarity(a, b).mean().item():.6f}"
        elif name == "triplet":
            loss = triplet(emb[anchors], emb[positives], emb[negatives])
            extra = f"active {(F.pairwise_distance(emb[anchors], emb[negatives]) < 0.5).sum().item()}"
        elif name == "batch_hard":
            loss, pos, neg = batch_hard_triplet_loss(emb, train_y)
            extra = f"pos {pos.item():.6f} neg {neg.item():.6f}"
        else:
            loss = head(emb, train_y)
            extra = f"head_norm {head.weight.norm().item():.6f}"
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if step % 2 == 0 or step == STEPS - 1:
            print(f"{name} step {step} loss {loss.item():.6f} {extra} lr {sched.get_last_lr()[0]:.6f}")
    evaluate(model, name)
