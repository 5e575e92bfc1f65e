"""A single-shot object detector trained twice, RetinaNet-style then SSD-style, in the idioms of public PyTorch
detection code written without torchvision (amdegroot's ssd.pytorch, lufficc's SSD, the RetinaNet and
YOLO-from-scratch tutorials, torchvision's own `sigmoid_focal_loss` and `_utils.BoxCoder` written out), run unchanged
under torch and under `python -m retrograd.run`: 32x32 grey images with 1-3 bright rectangles each, wide ones of
class 0 and tall ones of class 1, images and xyxy ground-truth boxes from NumPy's seeded generator, in a `Dataset`
whose variable-length targets a `collate_fn` keeps as lists of tensors for a `DataLoader(shuffle=True)`. Anchors
from `torch.meshgrid(..., indexing="ij")`, `torch.stack`, `repeat`, `expand` and `reshape`; pairwise IoU by
`torch.max(a[:, None, :2], b[:, :2])`, `clamp(min=0)` and `prod(dim=2)`; anchor matching by `iou.max(dim=1)` and
`iou.max(dim=0)`, every box forced onto its best anchor by index assignment, ignored anchors marked by `torch.where`;
box encoding and decoding (cx, cy, w, h with variances, `torch.log`, `exp` clamped). A conv backbone (Conv2d,
BatchNorm2d, ReLU(inplace=True)) with a classification head and a box head reshaped by
`permute(0, 2, 3, 1).reshape(N, -1, C)`, the classification bias set to the RetinaNet prior. RetinaNet's loss: a
hand-written sigmoid focal loss (`F.binary_cross_entropy_with_logits(reduction="none")`, `p_t`, alpha weighting)
against `F.one_hot` targets, normalised by the number of positives `clamp(min=1)`, and `F.smooth_l1_loss(beta=1/9,
reduction="sum")` on the positives picked by `torch.nonzero(as_tuple=True)`. SSD's loss: per-anchor
`F.cross_entropy(reduction="none")`, hard-negative mining by `loss.sort(descending=True)` and the ranks from sorting
the sort's indices, `num_neg = torch.clamp(3 * num_pos, max=...)`, and a smooth L1 on `masked_select`ed positives.
SGD with momentum and weight decay under `MultiStepLR`. Evaluation: a score threshold, `topk`, `index_select`, and
a greedy class-aware NMS as a Python while-loop over `argsort(descending=True)`; prints per image the number of
detections, how many match a box of their class at IoU >= 0.5, and their mean IoU. Prints the losses every other
step; `WEIGHTS=path` shares the initial weights (tests/programs/_draws.py shares the shuffles)."""

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from _weights import share_initial_weights
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)
SIZE, NUM_CLASSES, BATCH, EPOCHS = 32, 2, 8, 6
STRIDE, ANCHOR_SIZES, ASPECT_RATIOS = 4, (6.0, 12.0), (0.5, 1.0, 2.0)
VARIANCES = (0.1, 0.2)
TOPK, NMS_THRESH = 20, 0.45


class Rectangles(Dataset):
    """n noisy images with 1-3 bright rectangles; targets are (boxes xyxy float, labels long) per image."""

    def __init__(self, n, seed):
        rng = np.random.default_rng(seed)
        self.images = rng.normal(0.0, 0.2, (n, 1, SIZE, SIZE)).astype(np.float32)
        self.targets = []
        for i in range(n):
            boxes, labels = [], []
            for _ in range(rng.integers(1, 4)):
                w, h = rng.integers(4, 15, 2)
                if w == h:
                    w += 1
                x0, y0 = rng.integers(0, SIZE - w + 1), rng.integers(0, SIZE - h + 1)
                self.images[i, 0, y0:y0 + h, x0:x0 + w] += rng.uniform(0.8, 1.2)
                boxes.append([x0, y0, x0 + w, y0 + h])
                labels.append(0 if w > h else 1)
            self.targets.append((torch.tensor(boxes, dtype=torch.float32), torch.tensor(labels)))

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        return torch.from_numpy(self.images[i]), *self.targets[i]


def collate_fn(batch):
    """Stack the images; keep the per-image boxes and labels as lists (their lengths differ)."""
    images, boxes, labels = zip(*batch)
    return torch.stack(images), list(boxes), list(labels)


def make_anchors(fmap_size, stride, sizes, ratios):
    """xyxy anchors ordered (row, column, anchor) as the heads' permute(0, 2, 3, 1) lays them out."""
    shifts = (torch.arange(fmap_size, dtype=torch.float32) + 0.5) * stride
    shift_y, shift_x = torch.meshgrid(shifts, shifts, indexing="ij")
    centers = torch.stack([shift_x, shift_y], dim=-1).reshape(-1, 1, 2)
    wh = torch.tensor([[s * math.sqrt(r), s / math.sqrt(r)] for s in sizes for r in ratios])
    wh = wh.repeat(fmap_size * fmap_size, 1).reshape(-1, len(sizes) * len(ratios), 2)
    centers = centers.expand(-1, wh.size(1), 2)
    return torch.cat([centers - wh / 2, centers + wh / 2], dim=2).reshape(-1, 4)


def box_area(boxes):
    return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])


def box_iou(boxes1, boxes2):
    """Pairwise IoU of two sets of xyxy boxes, shape (len(boxes1), len(boxes2))."""
    lt = torch.max(boxes1[:, None, :2], boxes2[:, :2])
    rb = torch.min(boxes1[:, None, 2:], boxes2[:, 2:])
    inter = (rb - lt).clamp(min=0).prod(dim=2)
    return inter / (box_area(boxes1)[:, None] + box_area(boxes2) - inter)


def to_cxcywh(boxes):
    return torch.cat([(boxes[..., :2] + boxes[..., 2:]) / 2, boxes[..., 2:] - boxes[..., :2]], dim=-1)


def encode(matched, anchors):
    """Regression targets of matched xyxy boxes relative to their anchors."""
    g, a = to_cxcywh(matched), to_cxcywh(anchors)
    g_cxcy = (g[:, :2] - a[:, :2]) / (VARIANCES[0] * a[:, 2:])
    g_wh = torch.log(g[:, 2:] / a[:, 2:]) / VARIANCES[1]
    return torch.cat([g_cxcy, g_wh], dim=1)


def decode(deltas, anchors):
    """xyxy boxes from predicted offsets; the log-size offsets clamped as torchvision's BoxCoder does."""
    a = to_cxcywh(anchors)
    cxcy = a[:, :2] + deltas[..., :2] * VARIANCES[0] * a[:, 2:]
    dwh = torch.clamp(deltas[..., 2:] * VARIANCES[1], max=math.log(1000.0 / 16))
    wh = a[:, 2:] * torch.exp(dwh)
    return torch.cat([cxcy - wh / 2, cxcy + wh / 2], dim=-1)


def match(gt_boxes, gt_labels, anchors, fg_iou, bg_iou):
    """Per-anchor labels (0 background, -1 ignored, class + 1) and regression targets, SSD's matching."""
    iou = box_iou(gt_boxes, anchors)
    best_anchor_iou, best_anchor_idx = iou.max(dim=1)
    best_gt_iou, best_gt_idx = iou.max(dim=0)
    best_gt_iou[best_anchor_idx] = 2.0  # every ground truth keeps its best anchor
    for j in range(best_anchor_idx.size(0)):
        best_gt_idx[best_anchor_idx[j]] = j
    labels = gt_labels[best_gt_idx] + 1
    labels = torch.where(best_gt_iou < bg_iou, torch.zeros_like(labels), labels)
    labels[(best_gt_iou >= bg_iou) & (best_gt_iou < fg_iou)] = -1
    return labels, encode(gt_boxes[best_gt_idx], anchors)


def match_batch(boxes, labels, anchors, fg_iou, bg_iou):
    matched = [match(b, lab, anchors, fg_iou, bg_iou) for b, lab in zip(boxes, labels)]
    return torch.stack([m[0] for m in matched]), torch.stack([m[1] for m in matched])


class Detector(nn.Module):
    """Conv backbone to an 8x8 feature map; per-anchor class logits and box offsets."""

    def __init__(self, num_outputs, num_anchors, prior=0.01):
        super().__init__()
        self.num_outputs = num_outputs
        self.backbone = nn.Sequential(
            nn.Conv2d(1, 16, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(inplace=True),
            nn.Conv2d(16, 32, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(inplace=True),
            nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(inplace=True),
        )
        self.cls_head = nn.Conv2d(32, num_anchors * num_outputs, 3, padding=1)
        self.box_head = nn.Conv2d(32, num_anchors * 4, 3, padding=1)
        for layer in (self.cls_head, self.box_head):
            nn.init.normal_(layer.weight, std=0.01)
            nn.init.constant_(layer.bias, 0)
        nn.init.constant_(self.cls_head.bias, -math.log((1 - prior) / prior))

    def forward(self, x):
        features = self.backbone(x)
        n = x.size(0)
        cls_logits = self.cls_head(features).permute(0, 2, 3, 1).reshape(n, -1, self.num_outputs)
        box_deltas = self.box_head(features).permute(0, 2, 3, 1).reshape(n, -1, 4)
        return cls_logits, box_deltas


def sigmoid_focal_loss(inputs, targets, alpha=0.25, gamma=2.0, reduction="none"):
    """torchvision.ops.sigmoid_focal_loss, as written there."""
    p = torch.sigmoid(inputs)
    ce_loss = F.binary_cross_entropy_with_logits(inputs, targets, reduction="none")
    p_t = p * targets + (1 - p) * (1 - targets)
    loss = ce_loss * ((1 - p_t) ** gamma)
    if alpha >= 0:
        alpha_t = alpha * targets + (1 - alpha) * (1 - targets)
        loss = alpha_t * loss
    if reduction == "mean":
        loss = loss.mean()
    elif reduction == "sum":
        loss = loss.sum()
    return loss


def retinanet_loss(cls_logits, box_deltas, labels, box_targets):
    pos = labels > 0
    num_pos = pos.sum().clamp(min=1).float()
    valid = labels >= 0
    gt_classes = F.one_hot(labels.clamp(min=0), NUM_CLASSES + 1)[..., 1:].float()
    cls_loss = sigmoid_focal_loss(cls_logits[valid], gt_classes[valid], reduction="sum") / num_pos
    img_idx, anchor_idx = torch.nonzero(pos, as_tuple=True)
    box_loss = F.smooth_l1_loss(box_deltas[img_idx, anchor_idx], box_targets[pos], beta=1 / 9,
                                reduction="sum") / num_pos
    return cls_loss, box_loss


def ssd_loss(conf, box_deltas, labels, box_targets, neg_pos_ratio=3):
    pos = labels > 0
    num_anchors = labels.size(1)
    pos_idx = pos.unsqueeze(2).expand_as(box_deltas)
    loc_p = torch.masked_select(box_deltas, pos_idx).view(-1, 4)
    loc_t = torch.masked_select(box_targets, pos_idx).view(-1, 4)
    loss_l = F.smooth_l1_loss(loc_p, loc_t, reduction="sum")

    # hard negative mining on the per-anchor classification loss
    loss_c = F.cross_entropy(conf.reshape(-1, NUM_CLASSES + 1), labels.reshape(-1), reduction="none")
    loss_c = loss_c.view(labels.size(0), -1).detach()
    loss_c[pos] = 0
    _, loss_idx = loss_c.sort(1, descending=True)
    idx_rank = loss_idx.argsort(1)
    num_pos = pos.long().sum(1, keepdim=True)
    num_neg = torch.clamp(neg_pos_ratio * num_pos, max=num_anchors - 1)
    neg = idx_rank < num_neg.expand_as(idx_rank)
    picked = pos | neg
    loss_c = F.cross_entropy(conf[picked], labels[picked], reduction="sum")
    n = num_pos.sum().clamp(min=1).float()
    return loss_c / n, loss_l / n


def nms(boxes, scores, iou_threshold):
    """Greedy NMS: keep the best box, drop those overlapping it by more than iou_threshold, repeat."""
    order = scores.argsort(descending=True)
    keep = []
    while order.numel() > 0:
        i = order[0]
        keep.append(i.item())
        if order.numel() == 1:
            break
        iou = box_iou(boxes[i].unsqueeze(0), boxes[order[1:]])[0]
        order = order[1:][iou <= iou_threshold]
    return torch.tensor(keep, dtype=torch.long)


@torch.no_grad()
def detect(model, images, anchors, softmax, score_thresh):
    """Per image: (boxes, scores, labels) after thresholding, top-k and class-aware NMS."""
    model.eval()
    cls_logits, box_deltas = model(images)
    model.train()
    scores = F.softmax(cls_logits, dim=-1)[..., 1:] if softmax else torch.sigmoid(cls_logits)
    boxes = decode(box_deltas, anchors).clamp(min=0, max=SIZE)
    results = []
    for i in range(images.size(0)):
        flat = scores[i].flatten()
        candidates = torch.nonzero(flat > score_thresh).squeeze(1)
        top_scores, order = flat[candidates].topk(min(TOPK, candidates.numel()))
        candidates = candidates[order]
        anchor_idx, labels = candidates // NUM_CLASSES, candidates % NUM_CLASSES
        det_boxes = boxes[i].index_select(0, anchor_idx)
        offsets = labels[:, None].float() * (SIZE + 1)  # boxes of different classes never overlap
        keep = nms(det_boxes + offsets, top_scores, NMS_THRESH)
        results.append((det_boxes[keep], top_scores[keep], labels[keep]))
    return results


def evaluate(name, model, loader, anchors, softmax, score_thresh):
    total = matched_total = image = 0
    iou_sum = 0.0
    for images, gt_boxes, gt_labels in loader:
        for i, (boxes, scores, labels) in enumerate(detect(model, images, anchors, softmax, score_thresh)):
            image += 1
            iou = box_iou(boxes, gt_boxes[i])
            iou = torch.where(labels[:, None] == gt_labels[i][None, :], iou, torch.zeros_like(iou))
            best = iou.max(dim=1).values if len(boxes) else iou.new_zeros(0)
            hits = best.masked_select(best >= 0.5)
            total += len(boxes)
            matched_total += hits.numel()
            iou_sum += hits.sum().item()
            if image <= 4:
                mean = hits.mean().item() if hits.numel() else 0.0
                print(f"{name} image {image}: {len(boxes)} detections ({len(gt_boxes[i])} objects), "
                      f"{hits.numel()} matched, mean IoU {mean:.6f}, top score "
                      f"{scores[0].item() if len(scores) else 0.0:.6f}")
    print(f"{name} val: {total} detections, {matched_total} matched, "
          f"mean IoU {iou_sum / max(matched_total, 1):.6f}")


def train(name, model, loss_fn, fg_iou, bg_iou, anchors, loader):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[4], gamma=0.1)
    step = 0
    for epoch in range(EPOCHS):
        for images, boxes, labels in loader:
            target_labels, box_targets = match_batch(boxes, labels, anchors, fg_iou, bg_iou)
            cls_logits, box_deltas = model(images)
            cls_loss, box_loss = loss_fn(cls_logits, box_deltas, target_labels, box_targets)
            loss = cls_loss + box_loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
            if step % 2 == 0:
                print(f"{name} step {step} cls {cls_loss.item():.6f} box {box_loss.item():.6f} "
                      f"positives {(target_labels > 0).sum().item()}")
        scheduler.step()
        print(f"{name} epoch {epoch} lr {scheduler.get_last_lr()[0]:.6f}")


anchors = make_anchors(SIZE // STRIDE, STRIDE, ANCHOR_SIZES, ASPECT_RATIOS)
num_anchors = len(ANCHOR_SIZES) * len(ASPECT_RATIOS)
print("anchors", tuple(anchors.shape), anchors[:num_anchors + 1].tolist())
train_set, val_set = Rectangles(48, 0), Rectangles(16, 1)
train_loader = DataLoader(train_set, batch_size=BATCH, shuffle=True, collate_fn=collate_fn)
val_loader = DataLoader(val_set, batch_size=8, collate_fn=collate_fn)
images, boxes, labels = next(iter(val_loader))
print("batch", tuple(images.shape), [tuple(b.shape) for b in boxes], [lab.tolist() for lab in labels])

retinanet = Detector(NUM_CLASSES, num_anchors)
ssd = Detector(NUM_CLASSES + 1, num_anchors, prior=0.5)
share_initial_weights({"retinanet": retinanet, "ssd": ssd})
train("retinanet", retinanet, retinanet_loss, 0.5, 0.4, anchors, train_loader)
evaluate("retinanet", retinanet, val_loader, anchors, softmax=False, score_thresh=0.05)
train("ssd", ssd, ssd_loss, 0.5, 0.5, anchors, train_loader)
evaluate("ssd", ssd, val_loader, anchors, softmax=True, score_thresh=0.3)
