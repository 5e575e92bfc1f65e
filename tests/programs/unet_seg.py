"""A small U-Net for binary segmentation in the idioms of public segmentation code (milesial's Pytorch-UNet, the
segmentation_models_pytorch losses, MONAI-style Dice), run unchanged under torch and under `python -m retrograd.run`:
32x32 images of bright discs and rectangles on noise made with NumPy's seeded generator, their masks as targets, in a
`TensorDataset` and `DataLoader(shuffle=True)`; `DoubleConv` blocks of `nn.Conv2d(bias=False)` + `nn.GroupNorm` +
`nn.SiLU(inplace=True)` / `nn.ReLU(inplace=True)`, `nn.MaxPool2d(2)` down, one decoder stage upsampling by
`nn.ConvTranspose2d(kernel_size=2, stride=2)` and one by `F.interpolate(mode="bilinear", align_corners=False)`, the
skips joined by `torch.cat([x, skip], dim=1)`, a 1x1 `OutConv` to logits. The model is moved to
`memory_format=torch.channels_last` and the batches made `.contiguous(memory_format=torch.channels_last)`; random
horizontal flips of image and mask together by `torch.flip(..., dims=[3])` on the samples picked by
`torch.rand(B) < 0.5`. The loss is `nn.BCEWithLogitsLoss(pos_weight=...)` plus a soft Dice loss written by hand
(sigmoid, sums over dims (1, 2, 3), a smooth term); `torch.optim.AdamW` with `OneCycleLR` stepped per batch,
`torch.nn.utils.clip_grad_value_`. Validation in `model.eval()` under `torch.inference_mode()`, IoU and Dice of the
`sigmoid > 0.5` masks. Prints the losses every few steps and the metrics per epoch; `WEIGHTS=path` shares the
initial weights between the two runs (tests/programs/_draws.py shares the shuffles and the flip coins)."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from _weights import share_initial_weights
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
SIZE, EPOCHS, BATCH = 32, 2, 8


def make_dataset(n, seed):
    """n noisy grey images with one bright disc or rectangle each (NumPy's generator), and the shape's 0/1 mask."""
    rng = np.random.default_rng(seed)
    ys, xs = np.mgrid[0:SIZE, 0:SIZE]
    images = rng.normal(0.0, 0.3, (n, 1, SIZE, SIZE))
    masks = np.zeros((n, 1, SIZE, SIZE))
    for i in range(n):
        cy, cx = rng.uniform(8, SIZE - 8, 2)
        if rng.random() < 0.5:
            r = rng.uniform(4, 8)
            shape = (ys - cy) ** 2 + (xs - cx) ** 2 <= r * r
        else:
            hy, hx = rng.uniform(3, 7, 2)
            shape = (np.abs(ys - cy) <= hy) & (np.abs(xs - cx) <= hx)
        masks[i, 0] = shape
        images[i, 0] += shape * rng.uniform(0.8, 1.2)
    return torch.from_numpy(images).float(), torch.from_numpy(masks).float()


class DoubleConv(nn.Module):
    """(convolution => GroupNorm => activation) * 2"""

    def __init__(self, in_channels, out_channels, mid_channels=None, act=nn.SiLU):
        super().__init__()
        if not mid_channels:
            mid_channels = out_channels
        self.double_conv = nn.Sequential(
            nn.Conv2d(in_channels, mid_channels, kernel_size=3, padding=1, bias=False),
            nn.GroupNorm(4, mid_channels),
            act(inplace=True),
            nn.Conv2d(mid_channels, out_channels, kernel_size=3, padding=1, bias=False),
            nn.GroupNorm(4, out_channels),
            act(inplace=True),
        )

    def forward(self, x):
        return self.double_conv(x)


class Down(nn.Module):
    """Downscaling with maxpool then double conv"""

    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.maxpool_conv = nn.Sequential(nn.MaxPool2d(2), DoubleConv(in_channels, out_channels, act=nn.ReLU))

    def forward(self, x):
        return self.maxpool_conv(x)


class Up(nn.Module):
    """Upscaling then double conv: a transposed convolution, or bilinear interpolation and a halving convolution"""

    def __init__(self, in_channels, out_channels, bilinear=True):
        super().__init__()
        self.bilinear = bilinear
        if bilinear:
            self.up = nn.Conv2d(in_channels, in_channels // 2, kernel_size=1)
        else:
            self.up = nn.ConvTranspose2d(in_channels, in_channels // 2, kernel_size=2, stride=2)
        self.conv = DoubleConv(in_channels, out_channels)

    def forward(self, x1, x2):
        if self.bilinear:
            x1 = F.interpolate(x1, scale_factor=2, mode="bilinear", align_corners=False)
        x1 = self.up(x1)
        # input is CHW
        diffY = x2.size()[2] - x1.size()[2]
        diffX = x2.size()[3] - x1.size()[3]
        x1 = F.pad(x1, [diffX // 2, diffX - diffX // 2, diffY // 2, diffY - diffY // 2])
        x = torch.cat([x1, x2], dim=1)
        return self.conv(x)


class OutConv(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=1)

    def forward(self, x):
        return self.conv(x)


class UNet(nn.Module):
    def __init__(self, n_channels=1, n_classes=1, base=8):
        super().__init__()
        self.n_channels, self.n_classes = n_channels, n_classes
        self.inc = DoubleConv(n_channels, base)
        self.down1 = Down(base, base * 2)
        self.down2 = Down(base * 2, base * 4)
        self.up1 = Up(base * 4, base * 2, bilinear=False)
        self.up2 = Up(base * 2, base, bilinear=True)
        self.outc = OutConv(base, n_classes)

    def forward(self, x):
        x1 = self.inc(x)
        x2 = self.down1(x1)
        x3 = self.down2(x2)
        x = self.up1(x3, x2)
        x = self.up2(x, x1)
        return self.outc(x)


def dice_loss(logits, target, smooth=1.0):
    """Soft Dice over each image, averaged over the batch."""
    probs = torch.sigmoid(logits)
    intersection = (probs * target).sum(dim=(1, 2, 3))
    union = probs.sum(dim=(1, 2, 3)) + target.sum(dim=(1, 2, 3))
    dice = (2.0 * intersection + smooth) / (union + smooth)
    return 1.0 - dice.mean()


def random_hflip(images, masks):
    """Flip each (image, mask) pair left-right with probability 1/2."""
    flip = torch.rand(images.size(0)) < 0.5
    images, masks = images.clone(), masks.clone()
    images[flip] = torch.flip(images[flip], dims=[3])
    masks[flip] = torch.flip(masks[flip], dims=[3])
    return images, masks


train_images, train_masks = make_dataset(64, 0)
val_images, val_masks = make_dataset(32, 1)
train_loader = DataLoader(TensorDataset(train_images, train_masks), batch_size=BATCH, shuffle=True)
val_loader = DataLoader(TensorDataset(val_images, val_masks), batch_size=16)

model = UNet().to(memory_format=torch.channels_last)
share_initial_weights({"unet": model})
print("parameters:", sum(p.numel() for p in model.parameters() if p.requires_grad))

pos_weight = (train_masks.numel() - train_masks.sum()) / train_masks.sum()
criterion = nn.BCEWithLogitsLoss(pos_weight=pos_weight.reshape(1))
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-4)
scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=1e-2, epochs=EPOCHS,
                                                steps_per_epoch=len(train_loader))
print(f"pos_weight {pos_weight.item():.6f}")


@torch.inference_mode()
def evaluate(net, loader):
    net.eval()
    inter = union = dice_num = dice_den = 0.0
    for images, masks in loader:
        images = images.contiguous(memory_format=torch.channels_last)
        pred = (torch.sigmoid(net(images)) > 0.5).float()
        inter += (pred * masks).sum().item()
        union += ((pred + masks) > 0).float().sum().item()
        dice_num += 2 * (pred * masks).sum().item()
        dice_den += (pred.sum() + masks.sum()).item()
    net.train()
    return inter / max(union, 1.0), dice_num / max(dice_den, 1.0)


global_step = 0
for epoch in range(EPOCHS):
    model.train()
    epoch_loss = 0.0
    for images, masks in train_loader:
        images, masks = random_hflip(images, masks)
        images = images.contiguous(memory_format=torch.channels_last)
        masks_pred = model(images)
        loss = criterion(masks_pred, masks) + dice_loss(masks_pred, masks)

        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_value_(model.parameters(), clip_value=1.0)
        optimizer.step()
        scheduler.step()

        global_step += 1
        epoch_loss += loss.item()
        if global_step % 2 == 0:
            print(f"step {global_step} loss {loss.item():.6f} lr {scheduler.get_last_lr()[0]:.6f}")
    iou, dice = evaluate(model, val_loader)
    print(f"epoch {epoch} train loss {epoch_loss / len(train_loader):.6f} val IoU {iou:.6f} val Dice {dice:.6f}")

with torch.inference_mode():  # channels_last weights and activations all the way through the encoder
    features = model.down1(model.inc(images))
print("final output", tuple(masks_pred.shape), "channels_last weights",
      model.inc.double_conv[0].weight.is_contiguous(memory_format=torch.channels_last), "features",
      tuple(features.shape), features.is_contiguous(memory_format=torch.channels_last), features.is_contiguous())
