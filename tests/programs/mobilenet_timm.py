"""A tiny MobileNetV3 / EfficientNet trained the way timm and torchvision's classification references train them, run
unchanged under torch and under `python -m retrograd.run`: 3x16x16 images of six classes from NumPy's seeded
generator, a stem conv, inverted residual blocks (1x1 expand, depthwise 3x3 with `groups=channels`, squeeze-and-
excitation by `F.adaptive_avg_pool2d` (timm) or `nn.AdaptiveAvgPool2d(1)` (torchvision, its output shown by a
forward hook) + two 1x1 convs + a Hardsigmoid or sigmoid gate, 1x1 project) with SiLU and Hardswish,
`nn.BatchNorm2d(momentum=0.01, eps=1e-3)` as timm's TF ports set it, and stochastic depth by timm's `drop_path`
(`x.new_empty(shape).bernoulli_(keep_prob)` and `div_`). The model and inputs are channels_last
(`model.to(memory_format=torch.channels_last)`; float32 at a learning rate whose steps do not amplify its rounding).
Training (the references' `train_one_epoch`): mixup and cutmix on the batch (lam from NumPy's generator, partner
rows by `torch.randperm`, the cutmix box pasted by index slicing, soft targets scored by `torch.sum(-target *
F.log_softmax(x, -1), -1)`), alternating with plain batches under `nn.CrossEntropyLoss(label_smoothing=0.1)`; AdamW
with two parameter groups (no weight decay where `p.ndim <= 1`), `SequentialLR` of a `LinearLR` warmup and
`CosineAnnealingLR`, gradient clipping; an EMA of the weights by `AveragedModel(model,
multi_avg_fn=get_ema_multi_avg_fn(0.99))` and `update_parameters`, its BatchNorm statistics recomputed by
`swa_utils.update_bn`. Evaluation under `model.eval()` + `torch.inference_mode()` with top-1 / top-5 accuracy from
`output.topk(5, 1, True, True)`. Then a `state_dict` round trip through `torch.save` / `torch.load` into a fresh
model in a temporary directory, conv+BN folded by hand over `named_modules()` (torchvision's `fuse_conv_bn_eval`
written out, swapped in by `set_submodule`) with the fused and unfused outputs compared, and a short fine-tune of
the loaded model under `OneCycleLR`. Prints a block, the optimizer, losses, learning rates and accuracies;
`WEIGHTS=path` shares the initial weights."""

import copy
import os
import tempfile

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from _weights import share_initial_weights
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn, update_bn

torch.manual_seed(0)
CLASSES, SIZE, BATCH, STEPS, FINETUNE = 6, 16, 8, 12, 4

rng = np.random.default_rng(0)
prototypes = rng.normal(0.0, 1.0, (CLASSES, 3, SIZE, SIZE))


def make_split(n):
    """n noisy images around their class prototypes, float32 NCHW, with long labels."""
    labels = rng.integers(0, CLASSES, n)
    images = prototypes[labels] + 0.5 * rng.normal(0.0, 1.0, (n, 3, SIZE, SIZE))
    return torch.from_numpy(images.astype(np.float32)), torch.from_numpy(labels).long()


train_x, train_y = make_split(BATCH * 4)
test_x, test_y = make_split(24)


def make_divisible(v, divisor=8, min_value=None):
    """torchvision's _make_divisible: round channels to a multiple of divisor, never down by more than 10%."""
    min_value = min_value or divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


def drop_path(x, drop_prob: float = 0.0, training: bool = False, scale_by_keep: bool = True):
    """timm's stochastic depth: drop whole samples of the residual branch."""
    if drop_prob == 0.0 or not training:
        return x
    keep_prob = 1 - drop_prob
    shape = (x.shape[0],) + (1,) * (x.ndim - 1)
    random_tensor = x.new_empty(shape).bernoulli_(keep_prob)
    if keep_prob > 0.0 and scale_by_keep:
        random_tensor.div_(keep_prob)
    return x * random_tensor


class DropPath(nn.Module):
    def __init__(self, drop_prob=0.0):
        super().__init__()
        self.drop_prob = drop_prob

    def forward(self, x):
        return drop_path(x, self.drop_prob, self.training)

    def extra_repr(self):
        return f"drop_prob={round(self.drop_prob, 3):0.3f}"


def norm(channels):
    return nn.BatchNorm2d(channels, momentum=0.01, eps=1e-3)


class ConvBnAct(nn.Sequential):
    def __init__(self, cin, cout, kernel=3, stride=1, groups=1, act=nn.Hardswish):
        layers = [nn.Conv2d(cin, cout, kernel, stride, (kernel - 1) // 2, groups=groups, bias=False), norm(cout)]
        if act is not None:
            layers.append(act(inplace=True))
        super().__init__(*layers)


class SqueezeExcite(nn.Module):
    def __init__(self, channels, rd_ratio=0.25, gate=nn.Hardsigmoid):
        super().__init__()
        rd = make_divisible(channels * rd_ratio)
        self.torchvision_style = gate is nn.Hardsigmoid  # torchvision's SqueezeExcitation pools by a module
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.conv_reduce = nn.Conv2d(channels, rd, 1, bias=True)
        self.act1 = nn.ReLU(inplace=True)
        self.conv_expand = nn.Conv2d(rd, channels, 1, bias=True)
        self.gate = gate()

    def forward(self, x):
        x_se = self.avgpool(x) if self.torchvision_style else F.adaptive_avg_pool2d(x, 1)
        x_se = self.conv_expand(self.act1(self.conv_reduce(x_se)))
        return x * self.gate(x_se)


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, expand, act, se_gate, drop_path_rate):
        super().__init__()
        mid = make_divisible(cin * expand)
        self.has_skip = stride == 1 and cin == cout
        self.conv_pw = ConvBnAct(cin, mid, 1, act=act)
        self.conv_dw = ConvBnAct(mid, mid, 3, stride, groups=mid, act=act)
        self.se = SqueezeExcite(mid, gate=se_gate) if se_gate is not None else nn.Identity()
        self.conv_pwl = ConvBnAct(mid, cout, 1, act=None)
        self.drop_path = DropPath(drop_path_rate) if drop_path_rate else nn.Identity()

    def forward(self, x):
        shortcut = x
        x = self.conv_pwl(self.se(self.conv_dw(self.conv_pw(x))))
        if self.has_skip:
            x = self.drop_path(x) + shortcut
        return x


class TinyMobileNet(nn.Module):
    # (out channels, stride, expand ratio, activation, SE gate)
    CONFIG = [(16, 1, 1, nn.ReLU, None), (16, 1, 3, nn.Hardswish, nn.Hardsigmoid), (24, 2, 4, nn.SiLU, nn.Sigmoid),
              (24, 1, 3, nn.SiLU, nn.Sigmoid)]

    def __init__(self, num_classes=CLASSES, drop_path_rate=0.2, drop_rate=0.2):
        super().__init__()
        self.conv_stem = ConvBnAct(3, 16, 3, 1, act=nn.Hardswish)
        blocks, cin = [], 16
        for i, (cout, stride, expand, act, gate) in enumerate(self.CONFIG):
            dpr = drop_path_rate * i / (len(self.CONFIG) - 1)
            blocks.append(InvertedResidual(cin, cout, stride, expand, act, gate, dpr))
            cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.conv_head = ConvBnAct(cin, 48, 1, act=nn.Hardswish)
        self.global_pool = nn.AdaptiveAvgPool2d(1)
        self.flatten = nn.Flatten(1)
        self.drop_rate = drop_rate
        self.classifier = nn.Linear(48, num_classes)
        for m in self.modules():  # torchvision's MobileNetV3 init
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out")
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        x = self.conv_head(self.blocks(self.conv_stem(x)))
        x = self.flatten(self.global_pool(x))
        x = F.dropout(x, p=self.drop_rate, training=self.training)
        return self.classifier(x)


def param_groups_weight_decay(model, weight_decay=1e-5):
    """timm's helper: biases and norm weights (p.ndim <= 1) get no weight decay."""
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        (no_decay if param.ndim <= 1 or name.endswith(".bias") else decay).append(param)
    return [{"params": no_decay, "weight_decay": 0.0}, {"params": decay, "weight_decay": weight_decay}]


def rand_bbox(size, lam):
    """The cutmix box: a cut of area (1 - lam), centred at a random pixel, clipped to the image."""
    h, w = size[2], size[3]
    cut_rat = np.sqrt(1.0 - lam)
    cut_h, cut_w = int(h * cut_rat), int(w * cut_rat)
    cy, cx = rng.integers(h), rng.integers(w)
    bby1, bby2 = np.clip(cy - cut_h // 2, 0, h), np.clip(cy + cut_h // 2, 0, h)
    bbx1, bbx2 = np.clip(cx - cut_w // 2, 0, w), np.clip(cx + cut_w // 2, 0, w)
    return bby1, bby2, bbx1, bbx2


def mixup_cutmix(x, y, use_cutmix, alpha=0.8, smoothing=0.1):
    """Mix the batch with a random permutation of itself; targets become smoothed one-hots mixed by lam."""
    lam = float(rng.beta(alpha, alpha))
    index = torch.randperm(x.size(0))
    if use_cutmix:
        y1, y2, x1, x2 = rand_bbox(x.size(), lam)
        x = x.clone()
        x[:, :, y1:y2, x1:x2] = x[index, :, y1:y2, x1:x2]
        lam = 1 - ((y2 - y1) * (x2 - x1) / (x.size(-1) * x.size(-2)))
    else:
        x = x * lam + x[index] * (1 - lam)
    off, on = smoothing / CLASSES, 1.0 - smoothing + smoothing / CLASSES
    y1h = torch.full((y.size(0), CLASSES), off).scatter_(1, y.view(-1, 1), on)
    target = y1h * lam + y1h[index] * (1 - lam)
    return x, target, lam


def soft_target_cross_entropy(x, target):
    loss = torch.sum(-target * F.log_softmax(x, dim=-1), dim=-1)
    return loss.mean()


def accuracy(output, target, topk=(1,)):
    """torchvision's references/classification/utils.py accuracy."""
    maxk = max(topk)
    batch_size = target.size(0)
    _, pred = output.topk(maxk, 1, True, True)
    pred = pred.t()
    correct = pred.eq(target.view(1, -1).expand_as(pred))
    return [correct[:k].reshape(-1).float().sum(0, keepdim=True).mul_(100.0 / batch_size) for k in topk]


def evaluate(model, name):
    model.eval()
    with torch.inference_mode():
        output = model(test_x.contiguous(memory_format=torch.channels_last))
        loss = F.cross_entropy(output, test_y)
        acc1, acc5 = accuracy(output, test_y, topk=(1, 5))
    print(f"{name}: loss {loss.item():.6f} acc@1 {acc1.item():.3f} acc@5 {acc5.item():.3f} "
          f"inference {output.is_inference()}")
    return output


def fuse_conv_bn(conv, bn):
    """torchvision's fuse_conv_bn_eval written out: fold the BN affine and running statistics into the conv."""
    fused = copy.deepcopy(conv)
    scale = bn.weight / torch.sqrt(bn.running_var + bn.eps)
    conv_bias = conv.bias if conv.bias is not None else torch.zeros_like(bn.running_mean)
    fused.weight = nn.Parameter(conv.weight * scale.reshape(-1, 1, 1, 1))
    fused.bias = nn.Parameter((conv_bias - bn.running_mean) * scale + bn.bias)
    return fused


def fuse_model(model):
    """Fold each BatchNorm2d into the conv before it: find the pairs by named_modules(), swap by dotted name."""
    modules = dict(model.named_modules())
    pairs = [(name, f"{name[:-1]}1") for name, module in modules.items()
             if isinstance(module, nn.Conv2d) and isinstance(modules.get(f"{name[:-1]}1"), nn.BatchNorm2d)]
    for conv_name, bn_name in pairs:
        model.set_submodule(conv_name, fuse_conv_bn(modules[conv_name], modules[bn_name]))
        model.set_submodule(bn_name, nn.Identity(), strict=True)
    return model, len(pairs)


model = TinyMobileNet()
share_initial_weights({"model": model})
model = model.to(memory_format=torch.channels_last)
print(model.blocks[2])
print(f"params {sum(p.numel() for p in model.parameters())} "
      f"channels_last {model.conv_stem[0].weight.is_contiguous(memory_format=torch.channels_last)}")
ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.99))
optimizer = torch.optim.AdamW(param_groups_weight_decay(model, 0.05), lr=3e-3, betas=(0.9, 0.999))
print(optimizer)
print(f"ema channels_last {ema.module.conv_stem[0].weight.is_contiguous(memory_format=torch.channels_last)} "
      f"stride {ema.module.blocks[2].conv_dw[0].weight.stride()}")
warmup = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.1, total_iters=2)
cosine = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=STEPS - 2, eta_min=1e-5)
scheduler = torch.optim.lr_scheduler.SequentialLR(optimizer, schedulers=[warmup, cosine], milestones=[2])
criterion = nn.CrossEntropyLoss(label_smoothing=0.1)

def show_pooled(module, inputs, output):
    print(f"se pool {output.grad_fn.name()} stride {output.stride()} of {inputs[0].stride()}")


hook = model.blocks[1].se.avgpool.register_forward_hook(show_pooled)
model.train()
for step in range(STEPS):
    start = (step * BATCH) % len(train_y)
    images = train_x[start:start + BATCH].contiguous(memory_format=torch.channels_last)
    labels = train_y[start:start + BATCH]
    if step % 3 == 2:
        output = model(images)
        loss = criterion(output, labels)
        kind = "plain"
    else:
        images, targets, lam = mixup_cutmix(images, labels, use_cutmix=step % 3 == 1)
        output = model(images)
        loss = soft_target_cross_entropy(output, targets)
        kind = f"{'cutmix' if step % 3 == 1 else 'mixup'} lam {lam:.4f}"
    hook.remove()
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=5.0)
    optimizer.step()
    ema.update_parameters(model)
    scheduler.step()
    if step % 2 == 0 or step == STEPS - 1:
        print(f"step {step} {kind} loss {loss.item():.6f} grad_norm {grad_norm.item():.6f} "
              f"lr {scheduler.get_last_lr()[0]:.6f} {optimizer.param_groups[1]['lr']:.6f}")

evaluate(model, "model")
bn = model.blocks[1].conv_dw[1]
print(f"bn running_mean {bn.running_mean.sum().item():.6f} running_var {bn.running_var.sum().item():.6f} "
      f"tracked {bn.num_batches_tracked.item()} ema_n {ema.n_averaged.item()}")
update_bn([(train_x[i:i + BATCH].contiguous(memory_format=torch.channels_last), train_y[i:i + BATCH])
           for i in range(0, len(train_y), BATCH)], ema)
ema_bn = ema.module.blocks[1].conv_dw[1]
print(f"ema bn running_mean {ema_bn.running_mean.sum().item():.6f} momentum {ema_bn.momentum}")
evaluate(ema, "ema")

with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "checkpoint.pth")
    torch.save({"model": model.state_dict(), "model_ema": ema.module.state_dict(),
                "optimizer": optimizer.state_dict(), "lr_scheduler": scheduler.state_dict(), "epoch": 1}, path)
    checkpoint = torch.load(path, map_location="cpu", weights_only=True)
restored = TinyMobileNet().to(memory_format=torch.channels_last)
missing = restored.load_state_dict(checkpoint["model"], strict=True)
print(f"load {missing} keys {len(checkpoint['model'])} epoch {checkpoint['epoch']} "
      f"sched last_epoch {checkpoint['lr_scheduler']['last_epoch']}")
reference = evaluate(model, "saved")
again = evaluate(restored, "restored")
print(f"restored max diff {(again - reference).abs().max().item():.6f}")

fused, n_pairs = fuse_model(copy.deepcopy(restored))
fused.eval()
n_bn = sum(isinstance(m, nn.BatchNorm2d) for _, m in fused.named_modules())
with torch.inference_mode():
    fused_out = fused(test_x.contiguous(memory_format=torch.channels_last))
conv, bn = restored.blocks[2].conv_dw[0], restored.blocks[2].conv_dw[1]
library_fused = torch.nn.utils.fusion.fuse_conv_bn_eval(conv, bn.eval())
print(f"fuse_conv_bn_eval {library_fused} weight diff "
      f"{(library_fused.weight - fuse_conv_bn(conv, bn).weight).abs().max().item():.6f}")
print(f"fused pairs {n_pairs} batchnorms left {n_bn} max diff {(fused_out - reference).abs().max().item():.6f} "
      f"allclose {torch.allclose(fused_out, reference, atol=1e-4)}")

restored.train()
finetune = torch.optim.AdamW(param_groups_weight_decay(restored, 0.05), lr=1e-3)
onecycle = torch.optim.lr_scheduler.OneCycleLR(finetune, max_lr=2e-3, total_steps=FINETUNE, pct_start=0.5)
for step in range(FINETUNE):
    images = train_x[step * BATCH:(step + 1) * BATCH].contiguous(memory_format=torch.channels_last)
    loss = criterion(restored(images), train_y[step * BATCH:(step + 1) * BATCH])
    finetune.zero_grad()
    loss.backward()
    finetune.step()
    onecycle.step()
    print(f"finetune step {step} loss {loss.item():.6f} lr {onecycle.get_last_lr()[0]:.6f} "
          f"beta1 {finetune.param_groups[0]['betas'][0]:.4f}")
evaluate(restored, "finetuned")
