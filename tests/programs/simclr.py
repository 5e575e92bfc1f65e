"""SimCLR, then MoCo, on small synthetic images, in the idioms of public PyTorch contrastive-learning code (the
SimCLR paper's reference re-implementations, sthalles/SimCLR, facebookresearch/moco and its CIFAR-10 demo
notebook, the UvA deep-learning SimCLR tutorial), run unchanged under torch and under `python -m retrograd.run`:
16x16 RGB images of 4 texture classes (stripes both ways, checkerboards, blobs) from NumPy's seeded generator in a
`TensorDataset` and `DataLoader(shuffle=True, drop_last=True)`; two augmented views of each image made with
tensor ops: a random resized crop per image (`torch.randint` sizes and offsets, slicing, `F.interpolate(...,
mode="bilinear", antialias=True)` back to 16x16 as torchvision's RandomResizedCrop, `torch.stack`), flips by
`torch.where(torch.rand(B, 1, 1, 1) < 0.5, x.flip(3), x)`, a brightness jitter `x * (1 + 0.4 * (torch.rand(...) -
0.5))` and Gaussian noise by `torch.randn_like`. A
conv encoder (Conv2d, BatchNorm2d, ReLU(inplace=True), `AdaptiveAvgPool2d`, `torch.flatten(x, 1)`) and an MLP
projection head with `BatchNorm1d`. Two NT-Xent losses: the short form (`F.normalize(z, dim=1)`, `z @ z.T /
temperature`, the diagonal removed by `masked_fill(torch.eye(2N, dtype=torch.bool), float("-inf"))`, positives
by `torch.cat([torch.arange(N, 2N), torch.arange(N)])`, `F.cross_entropy`) and sthalles' `info_nce_loss` (labels
`(labels.unsqueeze(0) == labels.unsqueeze(1)).float()`, the diagonal dropped by `x[~mask].view(2N, -1)`,
positives and negatives by boolean masks, `torch.zeros(..., dtype=torch.long)` labels) with its top-1/top-5
`accuracy` by `topk`. SGD with `momentum=0.9, nesterov=True, weight_decay` under a `SequentialLR` of a warmup
`LambdaLR` and `CosineAnnealingLR`. MoCo v2: a key encoder copied by `param_k.data.copy_(param_q.data)` with
`requires_grad = False`, updated by `param_k.data.mul_(m).add_(param_q.data, alpha=1 - m)` under `@torch.no_grad()`,
a queue of keys in `register_buffer`s (`F.normalize(torch.randn(dim, K), dim=0)` and a `torch.long` pointer)
enqueued by slice assignment, logits by `torch.einsum("nc,nc->n")` and `torch.einsum("nc,ck->nk")`, trained
under `CosineAnnealingWarmRestarts`. Evaluations on frozen features (`requires_grad_(False)`, `eval()`,
`torch.no_grad()`, `detach()`): a linear probe, a kNN classifier by `torch.cdist`, `topk(k, largest=False)` and
`torch.mode` / `torch.bincount` votes, and MoCo's weighted kNN monitor (`torch.gather`, `scatter` of one-hots,
`argsort(descending=True)`). Prints the losses every step and the accuracies; `WEIGHTS=path` shares the initial
weights and the queue (tests/programs/_draws.py shares the shuffles and the augmentations' draws)."""

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from _weights import share_initial_weights
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)

NUM_CLASSES, IMG_SIZE, BATCH_SIZE, TEMPERATURE = 4, 16, 32, 0.5


def make_textures(n, seed):
    """n 3x16x16 images of 4 classes: horizontal and vertical stripes, checkerboards, blobs; random frequency,
    phase, colour and noise (NumPy's generator, the same in both runs)."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, NUM_CLASSES, n)
    yy, xx = np.meshgrid(np.arange(IMG_SIZE), np.arange(IMG_SIZE), indexing="ij")
    images = np.empty((n, 3, IMG_SIZE, IMG_SIZE), dtype=np.float32)
    for i, label in enumerate(labels):
        freq, phase = rng.uniform(0.5, 1.2), rng.uniform(0, 2 * np.pi)
        if label == 0:
            pattern = np.sin(freq * yy + phase)
        elif label == 1:
            pattern = np.sin(freq * xx + phase)
        elif label == 2:
            pattern = np.sin(freq * xx + phase) * np.sin(freq * yy + phase)
        else:
            cy, cx = rng.uniform(4, 12, 2)
            pattern = 2 * np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / (2 * rng.uniform(2, 4) ** 2)) - 1
        colour = rng.uniform(0.3, 1.0, (3, 1, 1))
        images[i] = colour * pattern + 0.2 * rng.standard_normal((3, IMG_SIZE, IMG_SIZE))
    return torch.from_numpy(images), torch.from_numpy(labels)


train_images, train_labels = make_textures(128, seed=1)
test_images, test_labels = make_textures(64, seed=2)
train_loader = DataLoader(TensorDataset(train_images, train_labels), batch_size=BATCH_SIZE, shuffle=True,
                          drop_last=True)


def random_resized_crop(x, min_size=10):
    """Each image cropped to a random square of min_size..16 pixels at a random place, resized back to 16x16."""
    batch = x.size(0)
    sizes = torch.randint(min_size, IMG_SIZE + 1, (batch,))
    crops = []
    for b in range(batch):
        s = int(sizes[b])
        i, j = torch.randint(0, IMG_SIZE - s + 1, (2,)).tolist()
        crop = x[b:b + 1, :, i:i + s, j:j + s]
        crops.append(F.interpolate(crop, size=(IMG_SIZE, IMG_SIZE), mode="bilinear", align_corners=False,
                                   antialias=True)[0])
    return torch.stack(crops)


def augment(x):
    """One random view: resized crop, horizontal flip, brightness jitter, Gaussian noise."""
    x = random_resized_crop(x)
    x = torch.where(torch.rand(x.size(0), 1, 1, 1) < 0.5, x.flip(3), x)
    x = x * (1 + 0.4 * (torch.rand(x.size(0), 1, 1, 1) - 0.5))
    return x + 0.1 * torch.randn_like(x)


class Encoder(nn.Module):
    """A small conv net, two stride-2 convolutions and global average pooling: images to 32-d features."""

    def __init__(self, feature_dim=32):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(3, 16, kernel_size=3, stride=2, padding=1, bias=False), nn.BatchNorm2d(16),
            nn.ReLU(inplace=True),
            nn.Conv2d(16, 32, kernel_size=3, stride=2, padding=1, bias=False), nn.BatchNorm2d(32),
            nn.ReLU(inplace=True),
            nn.Conv2d(32, feature_dim, kernel_size=3, padding=1, bias=False), nn.BatchNorm2d(feature_dim),
            nn.ReLU(inplace=True),
        )
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))

    def forward(self, x):
        return torch.flatten(self.avgpool(self.net(x)), 1)


class SimCLR(nn.Module):
    def __init__(self, feature_dim=32, projection_dim=16):
        super().__init__()
        self.encoder = Encoder(feature_dim)
        self.projector = nn.Sequential(nn.Linear(feature_dim, feature_dim, bias=False), nn.BatchNorm1d(feature_dim),
                                       nn.ReLU(inplace=True), nn.Linear(feature_dim, projection_dim))

    def forward(self, x):
        h = self.encoder(x)
        return h, self.projector(h)


def nt_xent(z_i, z_j, temperature=TEMPERATURE):
    """NT-Xent as most repos write it: each of the 2N views must pick its partner among the other 2N - 1."""
    n = z_i.size(0)
    z = F.normalize(torch.cat([z_i, z_j], dim=0), dim=1)
    sim = z @ z.T / temperature
    sim = sim.masked_fill(torch.eye(2 * n, dtype=torch.bool), float("-inf"))
    targets = torch.cat([torch.arange(n, 2 * n), torch.arange(n)])
    return F.cross_entropy(sim, targets)


def info_nce_loss(features, batch_size, n_views=2, temperature=TEMPERATURE):
    """sthalles/SimCLR's logits (positive first) and zero labels."""
    labels = torch.cat([torch.arange(batch_size) for i in range(n_views)], dim=0)
    labels = (labels.unsqueeze(0) == labels.unsqueeze(1)).float()
    features = F.normalize(features, dim=1)
    similarity_matrix = torch.matmul(features, features.T)
    # discard the main diagonal from both: labels and similarities matrix
    mask = torch.eye(labels.shape[0], dtype=torch.bool)
    labels = labels[~mask].view(labels.shape[0], -1)
    similarity_matrix = similarity_matrix[~mask].view(similarity_matrix.shape[0], -1)
    # select and combine multiple positives
    positives = similarity_matrix[labels.bool()].view(labels.shape[0], -1)
    # select only the negatives
    negatives = similarity_matrix[~labels.bool()].view(similarity_matrix.shape[0], -1)
    logits = torch.cat([positives, negatives], dim=1)
    labels = torch.zeros(logits.shape[0], dtype=torch.long)
    logits = logits / temperature
    return logits, labels


def accuracy(output, target, topk=(1,)):
    """Computes the accuracy over the k top predictions for the specified values of k"""
    with torch.no_grad():
        maxk = max(topk)
        batch_size = target.size(0)
        _, pred = output.topk(maxk, 1, True, True)
        pred = pred.t()
        correct = pred.eq(target.view(1, -1).expand_as(pred))
        res = []
        for k in topk:
            correct_k = correct[:k].reshape(-1).float().sum(0, keepdim=True)
            res.append(correct_k.mul_(100.0 / batch_size))
        return res


class MoCo(nn.Module):
    """A query encoder trained against a momentum-averaged key encoder and a queue of past keys."""

    def __init__(self, dim=16, K=64, m=0.99, T=0.2):
        super().__init__()
        self.K, self.m, self.T = K, m, T
        self.encoder_q = nn.Sequential(Encoder(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, dim))
        self.encoder_k = nn.Sequential(Encoder(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, dim))
        for param_q, param_k in zip(self.encoder_q.parameters(), self.encoder_k.parameters()):
            param_k.data.copy_(param_q.data)  # initialize
            param_k.requires_grad = False  # not update by gradient
        self.register_buffer("queue", torch.randn(dim, K))
        self.queue = nn.functional.normalize(self.queue, dim=0)
        self.register_buffer("queue_ptr", torch.zeros(1, dtype=torch.long))

    @torch.no_grad()
    def _momentum_update_key_encoder(self):
        for param_q, param_k in zip(self.encoder_q.parameters(), self.encoder_k.parameters()):
            param_k.data.mul_(self.m).add_(param_q.data, alpha=1 - self.m)

    @torch.no_grad()
    def _dequeue_and_enqueue(self, keys):
        batch_size = keys.shape[0]
        ptr = int(self.queue_ptr)
        assert self.K % batch_size == 0  # for simplicity
        self.queue[:, ptr:ptr + batch_size] = keys.T
        ptr = (ptr + batch_size) % self.K  # move pointer
        self.queue_ptr[0] = ptr

    def forward(self, im_q, im_k):
        q = nn.functional.normalize(self.encoder_q(im_q), dim=1)
        with torch.no_grad():
            self._momentum_update_key_encoder()
            k = nn.functional.normalize(self.encoder_k(im_k), dim=1)
        l_pos = torch.einsum("nc,nc->n", [q, k]).unsqueeze(-1)
        l_neg = torch.einsum("nc,ck->nk", [q, self.queue.clone().detach()])
        logits = torch.cat([l_pos, l_neg], dim=1)
        logits /= self.T
        labels = torch.zeros(logits.shape[0], dtype=torch.long)
        self._dequeue_and_enqueue(k)
        return logits, labels


model = SimCLR()
moco = MoCo()
probes = {"simclr": nn.Linear(32, NUM_CLASSES), "moco": nn.Linear(32, NUM_CLASSES)}
share_initial_weights({"simclr": model, "moco": moco, **{f"{name} probe": probe for name, probe in probes.items()}})

# 1. SimCLR
print(f"SimCLR: {sum(p.numel() for p in model.parameters() if p.requires_grad)} parameters")
epochs, warmup_epochs = 4, 1
steps_per_epoch = len(train_loader)
optimizer = torch.optim.SGD(model.parameters(), lr=0.3 * BATCH_SIZE / 256, momentum=0.9, nesterov=True,
                            weight_decay=1e-4)
warmup = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: (step + 1) / (warmup_epochs * steps_per_epoch))
cosine = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=(epochs - warmup_epochs) * steps_per_epoch)
scheduler = torch.optim.lr_scheduler.SequentialLR(optimizer, [warmup, cosine],
                                                  milestones=[warmup_epochs * steps_per_epoch])
criterion = nn.CrossEntropyLoss()
for epoch in range(epochs):
    model.train()
    for step, (images, _) in enumerate(train_loader):
        views = torch.cat([augment(images), augment(images)], dim=0)
        _, z = model(views)
        logits, labels = info_nce_loss(z, BATCH_SIZE)
        loss = criterion(logits, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        z_i, z_j = z.detach().chunk(2)
        top1, top5 = accuracy(logits, labels, topk=(1, 5))
        print(f"simclr epoch {epoch} step {step} loss {loss.item():.6f} (nt-xent {nt_xent(z_i, z_j).item():.6f}) "
              f"top1 {top1[0]:.2f} top5 {top5[0]:.2f} lr {scheduler.get_last_lr()[0]:.6f}")


# 2. evaluation on the frozen encoder
@torch.no_grad()
def extract(encoder, images):
    encoder.eval()
    return encoder(images)


def linear_probe(encoder, name, steps=60):
    encoder.requires_grad_(False)
    train_features, test_features = extract(encoder, train_images).detach(), extract(encoder, test_images)
    mean, std = train_features.mean(0), train_features.std(0) + 1e-6
    train_features, test_features = (train_features - mean) / std, (test_features - mean) / std
    probe = probes[name]
    probe_optimizer = torch.optim.Adam(probe.parameters(), lr=0.05)
    for step in range(steps):
        loss = F.cross_entropy(probe(train_features), train_labels)
        probe_optimizer.zero_grad()
        loss.backward()
        probe_optimizer.step()
        if step % 20 == 19:
            print(f"{name} probe step {step + 1} loss {loss.item():.6f}")
    with torch.no_grad():
        test_accuracy = (probe(test_features).argmax(dim=1) == test_labels).float().mean().item() * 100
    print(f"{name} linear probe: test accuracy {test_accuracy:.2f}%")


def knn_classify(encoder, name, k=5):
    train_features = F.normalize(extract(encoder, train_images), dim=1)
    test_features = F.normalize(extract(encoder, test_images), dim=1)
    distances = torch.cdist(test_features, train_features)
    nearest = distances.topk(k, dim=1, largest=False).indices
    neighbour_labels = train_labels[nearest]
    by_mode = torch.mode(neighbour_labels, dim=1).values
    by_count = torch.stack([torch.bincount(row, minlength=NUM_CLASSES).argmax() for row in neighbour_labels])
    print(f"{name} {k}-NN: accuracy by mode {(by_mode == test_labels).float().mean().item() * 100:.2f}%, "
          f"by bincount {(by_count == test_labels).float().mean().item() * 100:.2f}%, nearest distance "
          f"{distances.min(dim=1).values.mean().item():.6f}")


def knn_predict(feature, feature_bank, feature_labels, classes, knn_k, knn_t):
    """MoCo's demo: a kNN monitor weighted by exp(similarity / t) (feature_bank is D x N)."""
    sim_matrix = torch.mm(feature, feature_bank)
    sim_weight, sim_indices = sim_matrix.topk(k=knn_k, dim=-1)
    sim_labels = torch.gather(feature_labels.expand(feature.size(0), -1), dim=-1, index=sim_indices)
    sim_weight = (sim_weight / knn_t).exp()
    one_hot_label = torch.zeros(feature.size(0) * knn_k, classes)
    one_hot_label = one_hot_label.scatter(dim=-1, index=sim_labels.view(-1, 1), value=1.0)
    pred_scores = torch.sum(one_hot_label.view(feature.size(0), -1, classes) * sim_weight.unsqueeze(dim=-1), dim=1)
    pred_labels = pred_scores.argsort(dim=-1, descending=True)
    return pred_labels, pred_scores


def knn_monitor(encoder, name, knn_k=10, knn_t=0.1):
    feature_bank = F.normalize(extract(encoder, train_images), dim=1).t().contiguous()
    feature = F.normalize(extract(encoder, test_images), dim=1)
    pred_labels, pred_scores = knn_predict(feature, feature_bank, train_labels, NUM_CLASSES, knn_k, knn_t)
    top1 = (pred_labels[:, 0] == test_labels).float().sum().item()
    top_share = (pred_scores.max(dim=1).values / pred_scores.sum(dim=1)).mean()
    print(f"{name} kNN monitor: acc {top1 / len(test_labels) * 100:.2f}%, mean top vote share {top_share.item():.6f}")


linear_probe(model.encoder, "simclr")
knn_classify(model.encoder, "simclr")
knn_monitor(model.encoder, "simclr")


# 3. MoCo v2
print(f"MoCo: {sum(p.numel() for p in moco.parameters() if p.requires_grad)} trainable of "
      f"{sum(p.numel() for p in moco.parameters())} parameters, queue {tuple(moco.queue.shape)}")
optimizer = torch.optim.SGD(filter(lambda p: p.requires_grad, moco.parameters()), lr=0.06, momentum=0.9,
                            weight_decay=5e-4)
scheduler = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(optimizer, T_0=2, T_mult=2, eta_min=1e-3)
for epoch in range(3):
    moco.train()
    for step, (images, _) in enumerate(train_loader):
        logits, labels = moco(augment(images), augment(images))
        loss = criterion(logits, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step(epoch + step / steps_per_epoch)
        top1, = accuracy(logits, labels)
        print(f"moco epoch {epoch} step {step} loss {loss.item():.6f} top1 {top1.item():.2f} queue ptr "
              f"{int(moco.queue_ptr)} lr {optimizer.param_groups[0]['lr']:.6f}")
key_gap = math.sqrt(sum((pk - pq).pow(2).sum().item() for pq, pk in zip(moco.encoder_q.parameters(),
                                                                          moco.encoder_k.parameters())))
print(f"MoCo key encoder distance {key_gap:.6f}, queue norms {moco.queue.norm(dim=0).mean().item():.6f}")
linear_probe(moco.encoder_q[0], "moco")
knn_classify(moco.encoder_q[0], "moco")
knn_monitor(moco.encoder_q[0], "moco")
