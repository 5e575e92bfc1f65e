"""A tiny Vision Transformer distilled from a small CNN teacher, in the idioms of public image-classification code
(timm's and DeiT's `VisionTransformer`, torchvision's `vit_b_16` and its classification reference `train.py`, the
PyTorch knowledge-distillation tutorial), run unchanged under torch and under `python -m retrograd.run`: 16x16 RGB
images of 8 classes made from class prototypes (`F.interpolate` of a coarse `torch.randn` pattern) plus
`torch.randn` noise and a `torch.rand` brightness, in a `TensorDataset` and `DataLoader(shuffle=True)`; a teacher
CNN (Conv2d, BatchNorm2d, ReLU(inplace=True), MaxPool2d, AdaptiveAvgPool2d, Flatten, Linear) trained first with
plain cross-entropy under SGD with momentum; the student ViT: a `PatchEmbed` by `nn.Conv2d(kernel_size=patch,
stride=patch)` and `.flatten(2).transpose(1, 2)`, a class token `nn.Parameter(torch.zeros(1, 1, D))` expanded and
`torch.cat`-ed, a position embedding initialised by `nn.init.trunc_normal_(std=.02)`, `self.apply(_init_weights)`,
`nn.TransformerEncoder` of pre-norm GELU `nn.TransformerEncoderLayer`s with `batch_first=True` and dropout, a final
LayerNorm and a head on the class token, `@torch.jit.ignore` on `no_weight_decay`. Distillation as the tutorial
writes it, `F.kl_div(F.log_softmax(s / T), F.softmax(t / T), reduction="batchmean") * T * T`, mixed with
`F.cross_entropy(..., label_smoothing=0.1)`, the teacher frozen (`requires_grad_(False)`, `eval()`, `no_grad()`);
torchvision's `RandomMixup` on some batches (`torch.rand(1).item() >= p`, the mixing weight from
`torch.distributions.Beta(...).sample()`, partners by `x.roll(1, 0)`, targets `F.one_hot(...).float()` mixed by
`mul_`/`add_`, so the hard loss takes probabilities with label smoothing). AdamW over timm's
`param_groups_weight_decay` (no decay for `p.ndim <= 1`, biases, and the names in `no_weight_decay()`), a
`SequentialLR` of `LinearLR(start_factor=0.1)` warmup then `CosineAnnealingLR`, `clip_grad_norm_`, and an EMA of the
student by `AveragedModel(multi_avg_fn=get_ema_multi_avg_fn(0.99))` updated every step. Evaluation under
`torch.no_grad()` with torchvision's `accuracy` helper (`output.topk(maxk, 1, True, True)`, `pred.t()`,
`eq(target.view(1, -1).expand_as(pred))`) for teacher, student and EMA. Prints the losses every step and the
accuracies; `WEIGHTS=path` shares the initial weights between the two runs (tests/programs/_draws.py shares the
data, the shuffles and the mixup coins; the Beta draws and dropout masks come from the seeded stream itself)."""

import torch
import torch.nn.functional as F
from _weights import share_initial_weights
from torch import nn
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)

NUM_CLASSES, IMG_SIZE, PATCH_SIZE = 8, 16, 4


def make_images(prototypes, n):
    """n noisy images of random classes: the class's smooth pattern, Gaussian noise, a random brightness."""
    labels = torch.randint(0, NUM_CLASSES, (n,))
    images = prototypes[labels] + 0.5 * torch.randn(n, 3, IMG_SIZE, IMG_SIZE) + 0.5 * torch.rand(n, 1, 1, 1)
    return images, labels


prototypes = F.interpolate(torch.randn(NUM_CLASSES, 3, 4, 4), size=(IMG_SIZE, IMG_SIZE), mode="bilinear",
                           align_corners=False)
train_set = TensorDataset(*make_images(prototypes, 192))
val_set = TensorDataset(*make_images(prototypes, 96))
train_loader = DataLoader(train_set, batch_size=32, shuffle=True, drop_last=True)
val_loader = DataLoader(val_set, batch_size=48)


class TeacherCNN(nn.Module):
    def __init__(self, num_classes=NUM_CLASSES):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, kernel_size=3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=2, stride=2),
            nn.Conv2d(16, 32, kernel_size=3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d((1, 1)),
        )
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(32, num_classes))

    def forward(self, x):
        return self.classifier(self.features(x))


class PatchEmbed(nn.Module):
    """Image to patch embedding: one strided convolution, then (B, C, H, W) -> (B, H*W, C)."""

    def __init__(self, img_size=16, patch_size=4, in_chans=3, embed_dim=32):
        super().__init__()
        self.num_patches = (img_size // patch_size) ** 2
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, x):
        return self.proj(x).flatten(2).transpose(1, 2)


class VisionTransformer(nn.Module):
    def __init__(self, img_size=16, patch_size=4, in_chans=3, num_classes=NUM_CLASSES, embed_dim=32, depth=2,
                 num_heads=4, mlp_ratio=4, drop_rate=0.1):
        super().__init__()
        self.patch_embed = PatchEmbed(img_size, patch_size, in_chans, embed_dim)
        num_patches = self.patch_embed.num_patches
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, num_patches + 1, embed_dim))
        self.pos_drop = nn.Dropout(p=drop_rate)
        encoder_layer = nn.TransformerEncoderLayer(embed_dim, num_heads, mlp_ratio * embed_dim, drop_rate,
                                                   activation="gelu", batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(encoder_layer, num_layers=depth)
        self.norm = nn.LayerNorm(embed_dim, eps=1e-6)
        self.head = nn.Linear(embed_dim, num_classes)

        nn.init.trunc_normal_(self.pos_embed, std=.02)
        nn.init.trunc_normal_(self.cls_token, std=.02)
        self.apply(self._init_weights)

    def _init_weights(self, m):
        if isinstance(m, nn.Linear):
            nn.init.trunc_normal_(m.weight, std=.02)
            if m.bias is not None:
                nn.init.constant_(m.bias, 0)
        elif isinstance(m, nn.LayerNorm):
            nn.init.constant_(m.bias, 0)
            nn.init.constant_(m.weight, 1.0)

    @torch.jit.ignore
    def no_weight_decay(self):
        return {"pos_embed", "cls_token"}

    def forward_features(self, x):
        x = self.patch_embed(x)
        cls_token = self.cls_token.expand(x.shape[0], -1, -1)  # stole cls_tokens impl from Phil Wang, thanks
        x = torch.cat((cls_token, x), dim=1)
        x = self.pos_drop(x + self.pos_embed)
        x = self.blocks(x)
        return self.norm(x)

    def forward(self, x):
        x = self.forward_features(x)
        return self.head(x[:, 0])


def param_groups_weight_decay(model, weight_decay=1e-5, no_weight_decay_list=()):
    no_weight_decay_list = set(no_weight_decay_list)
    decay = []
    no_decay = []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        if param.ndim <= 1 or name.endswith(".bias") or name in no_weight_decay_list:
            no_decay.append(param)
        else:
            decay.append(param)
    return [
        {"params": no_decay, "weight_decay": 0.},
        {"params": decay, "weight_decay": weight_decay}]


class RandomMixup(torch.nn.Module):
    """Mixup on a batch (torchvision's classification reference): with probability p, each image and its one-hot
    target are mixed with the next in the batch by lambda ~ Beta(alpha, alpha)."""

    def __init__(self, num_classes, p=0.5, alpha=1.0, inplace=False):
        super().__init__()
        self.num_classes, self.p, self.alpha, self.inplace = num_classes, p, alpha, inplace

    def forward(self, batch, target):
        if not self.inplace:
            batch = batch.clone()
            target = target.clone()
        if target.ndim == 1:
            target = F.one_hot(target, num_classes=self.num_classes).float()
        if torch.rand(1).item() >= self.p:
            return batch, target
        batch_rolled = batch.roll(1, 0)
        target_rolled = target.roll(1, 0)
        lambda_param = float(torch.distributions.Beta(self.alpha, self.alpha).sample())
        batch_rolled.mul_(1.0 - lambda_param)
        batch.mul_(lambda_param).add_(batch_rolled)
        target_rolled.mul_(1.0 - lambda_param)
        target.mul_(lambda_param).add_(target_rolled)
        return batch, target


def accuracy(output, target, topk=(1,)):
    """Computes the accuracy over the k top predictions for the specified values of k"""
    with torch.no_grad():
        maxk = max(topk)
        batch_size = target.size(0)
        if target.ndim == 2:
            target = target.max(dim=1)[1]

        _, pred = output.topk(maxk, 1, True, True)
        pred = pred.t()
        correct = pred.eq(target.view(1, -1).expand_as(pred))

        res = []
        for k in topk:
            correct_k = correct[:k].reshape(-1).float().sum(0, keepdim=True)
            res.append(correct_k.mul_(100.0 / batch_size))
        return res


def evaluate(model, name):
    model.eval()
    total_loss, total_acc1, total_acc5, num_processed_samples = 0.0, 0.0, 0.0, 0
    with torch.no_grad():
        for image, target in val_loader:
            output = model(image)
            loss = F.cross_entropy(output, target)
            acc1, acc5 = accuracy(output, target, topk=(1, 5))
            batch_size = image.shape[0]
            total_loss += loss.item() * batch_size
            total_acc1 += acc1.item() * batch_size
            total_acc5 += acc5.item() * batch_size
            num_processed_samples += batch_size
    print(f"{name}: loss {total_loss / num_processed_samples:.6f} Acc@1 {total_acc1 / num_processed_samples:.3f} "
          f"Acc@5 {total_acc5 / num_processed_samples:.3f}")


teacher = TeacherCNN()
student = VisionTransformer(img_size=IMG_SIZE, patch_size=PATCH_SIZE, num_classes=NUM_CLASSES)
share_initial_weights({"teacher": teacher, "student": student})
print(f"teacher {sum(p.numel() for p in teacher.parameters())} parameters, "
      f"student {sum(p.numel() for p in student.parameters() if p.requires_grad)} parameters")

# 1. the teacher, by plain cross-entropy
optimizer = torch.optim.SGD(teacher.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
for epoch in range(3):
    teacher.train()
    for i, (image, target) in enumerate(train_loader):
        output = teacher(image)
        loss = F.cross_entropy(output, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"teacher epoch {epoch} step {i} loss {loss.item():.6f}")
evaluate(teacher, "teacher")

# 2. the student, distilled from the frozen teacher
teacher.eval()
teacher.requires_grad_(False)
T, soft_target_loss_weight, ce_loss_weight = 2.0, 0.5, 0.5
epochs, warmup_epochs = 3, 1
steps_per_epoch = len(train_loader)
parameters = param_groups_weight_decay(student, weight_decay=0.05, no_weight_decay_list=student.no_weight_decay())
optimizer = torch.optim.AdamW(parameters, lr=3e-3, betas=(0.9, 0.999))
warmup_lr_scheduler = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.1,
                                                        total_iters=warmup_epochs * steps_per_epoch)
main_lr_scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(
    optimizer, T_max=(epochs - warmup_epochs) * steps_per_epoch, eta_min=1e-5)
lr_scheduler = torch.optim.lr_scheduler.SequentialLR(optimizer, schedulers=[warmup_lr_scheduler, main_lr_scheduler],
                                                     milestones=[warmup_epochs * steps_per_epoch])
model_ema = AveragedModel(student, multi_avg_fn=get_ema_multi_avg_fn(0.99))
mixup = RandomMixup(NUM_CLASSES, p=0.5, alpha=0.8)
criterion = nn.CrossEntropyLoss(label_smoothing=0.1)

for epoch in range(epochs):
    student.train()
    for i, (image, target) in enumerate(train_loader):
        if epoch > 0:
            image, target = mixup(image, target)
        with torch.no_grad():
            teacher_logits = teacher(image)
        student_logits = student(image)
        soft_targets_loss = F.kl_div(F.log_softmax(student_logits / T, dim=-1), F.softmax(teacher_logits / T, dim=-1),
                                     reduction="batchmean") * T * T
        label_loss = criterion(student_logits, target)
        loss = soft_target_loss_weight * soft_targets_loss + ce_loss_weight * label_loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = nn.utils.clip_grad_norm_(student.parameters(), 1.0)
        optimizer.step()
        model_ema.update_parameters(student)
        lr_scheduler.step()
        acc1, = accuracy(student_logits, target)
        print(f"student epoch {epoch} step {i} loss {loss.item():.6f} (kd {soft_targets_loss.item():.6f}, "
              f"ce {label_loss.item():.6f}) Acc@1 {acc1.item():.2f} grad norm {grad_norm.item():.6f} "
              f"lr {lr_scheduler.get_last_lr()[0]:.6f}")

evaluate(teacher, "teacher")
evaluate(student, "student")
evaluate(model_ema, "student EMA")
