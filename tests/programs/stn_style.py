"""A spatial transformer classifier, then neural style transfer, in the idioms of PyTorch's "Spatial Transformer
Networks" and "Neural Transfer Using PyTorch" tutorials, run unchanged under torch and under `python -m
retrograd.run`. Part 1: 16x16 grey images of three shapes (square, cross, bar), each shifted, rotated and scaled at
random by NumPy's seeded generator (the warp itself done by `F.affine_grid` and `F.grid_sample(padding_mode=
"border")`), served by a `TensorDataset` through a `DataLoader(shuffle=True)`. The classifier's localisation net
(Conv2d, MaxPool2d, ReLU(True)) feeds `fc_loc`, whose last Linear starts at the identity transform by
`weight.data.zero_()` and `bias.data.copy_(torch.tensor([1, 0, 0, 0, 1, 0], dtype=torch.float))`; `theta.view(-1, 2,
3)`, `F.affine_grid(theta, x.size(), align_corners=False)`, `F.grid_sample(x, grid, align_corners=False)`; then
Conv2d, `nn.Dropout2d`, `F.max_pool2d`, `F.relu`, `F.dropout(training=self.training)`, `F.log_softmax` and
`F.nll_loss` (summed with `reduction="sum"` at test time, `pred.eq(target.view_as(pred))` for accuracy), SGD. A
`register_forward_hook` on the localisation net records its output shapes; after training the learnt thetas of a
test batch are printed, and the test images are resampled with `mode="nearest"` by a fixed zoom. Part 2: style
transfer on 3x24x24 NumPy images through a small fixed conv feature extractor, in double precision (`.double()`): a
`Normalization` module (`torch.tensor(mean).view(-1, 1, 1)`), the model rebuilt as an `nn.Sequential` by iterating
over the extractor's children (`ReLU(inplace=False)` replacing the in-place ones) and inserting `ContentLoss` /
`StyleLoss` modules that `.detach()` their targets and store `self.loss` in forward, trimmed after the last loss by
slicing the Sequential; the gram matrix by `features.view(a * b, c * d)` and `torch.mm(features, features.t()).div(a
* b * c * d)`; `input_img = content_img.clone()`, `requires_grad_(True)`, `model.eval()`,
`model.requires_grad_(False)`, `optim.LBFGS([input_img])` with a closure that clamps the image under
`torch.no_grad()`, zeroes the gradient, weighs the style and content scores, calls `backward()` and returns the
loss; a final `clamp_(0, 1)` under no_grad. Forward hooks on the feature extractor record its feature shapes.
`WEIGHTS=path` shares the initial weights (tests/programs/_draws.py shares the shuffles)."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from _weights import share_initial_weights
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
SIZE, NUM_CLASSES = 16, 3


# ---- part 1: a spatial transformer network ----

def make_shapes(n, rng):
    """n images of a centred square, cross or bar, warped by a random rotation, scale and shift; and their labels."""
    base = np.zeros((NUM_CLASSES, 1, SIZE, SIZE), dtype=np.float32)
    base[0, 0, 5:11, 5:11] = 1.0
    base[1, 0, 7:9, 3:13] = 1.0
    base[1, 0, 3:13, 7:9] = 1.0
    base[2, 0, 7:9, 2:14] = 1.0
    labels = rng.integers(0, NUM_CLASSES, n)
    angle = rng.uniform(-0.6, 0.6, n)
    scale = rng.uniform(0.9, 1.2, n)
    shift = rng.uniform(-0.25, 0.25, (n, 2))
    theta = np.stack([np.stack([scale * np.cos(angle), -scale * np.sin(angle), shift[:, 0]], 1),
                      np.stack([scale * np.sin(angle), scale * np.cos(angle), shift[:, 1]], 1)], 1)
    theta = torch.from_numpy(theta.astype(np.float32))
    images = torch.from_numpy(base[labels])
    grid = F.affine_grid(theta, images.size(), align_corners=False)
    images = F.grid_sample(images, grid, padding_mode="border", align_corners=False)
    noise = torch.from_numpy(rng.normal(0.0, 0.05, images.shape).astype(np.float32))
    images = (images + noise - 0.11) / 0.3  # roughly zero mean, unit variance
    return images, torch.from_numpy(labels)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 10, kernel_size=3)
        self.conv2 = nn.Conv2d(10, 16, kernel_size=3)
        self.conv2_drop = nn.Dropout2d()
        self.fc1 = nn.Linear(16 * 2 * 2, 32)
        self.fc2 = nn.Linear(32, NUM_CLASSES)

        # spatial transformer localisation network
        self.localization = nn.Sequential(
            nn.Conv2d(1, 8, kernel_size=5),
            nn.MaxPool2d(2, stride=2),
            nn.ReLU(True),
            nn.Conv2d(8, 10, kernel_size=3),
            nn.MaxPool2d(2, stride=2),
            nn.ReLU(True),
        )
        # regressor for the 3 * 2 affine matrix
        self.fc_loc = nn.Sequential(
            nn.Linear(10 * 2 * 2, 32),
            nn.ReLU(True),
            nn.Linear(32, 3 * 2),
        )
        # start from the identity transformation
        self.fc_loc[2].weight.data.zero_()
        self.fc_loc[2].bias.data.copy_(torch.tensor([1, 0, 0, 0, 1, 0], dtype=torch.float))

    def stn(self, x):
        xs = self.localization(x)
        xs = xs.view(-1, 10 * 2 * 2)
        theta = self.fc_loc(xs)
        theta = theta.view(-1, 2, 3)
        grid = F.affine_grid(theta, x.size(), align_corners=False)
        x = F.grid_sample(x, grid, align_corners=False)
        return x, theta

    def forward(self, x):
        x, _ = self.stn(x)
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
        x = x.view(-1, 16 * 2 * 2)
        x = F.relu(self.fc1(x))
        x = F.dropout(x, training=self.training)
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


def train_stn(model, optimizer, loader, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(loader):
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        if batch_idx % 4 == 0:
                print(f"stn epoch {epoch} batch {batch_idx} [{batch_idx * len(data)}/{len(loader.dataset)}] "
                  f"loss {loss.item():.6f}")


def test_stn(model, loader):
    with torch.no_grad():
        model.eval()
        test_loss = 0
        correct = 0
        for data, target in loader:
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction="sum").item()
            pred = output.max(1, keepdim=True)[1]
            correct += pred.eq(target.view_as(pred)).sum().item()
        test_loss /= len(loader.dataset)
        print(f"stn test: average loss {test_loss:.6f}, accuracy {correct}/{len(loader.dataset)}")


rng = np.random.default_rng(0)
train_x, train_y = make_shapes(256, rng)
test_x, test_y = make_shapes(32, rng)
print("stn data", tuple(train_x.shape), f"{train_x.mean().item():.6f}", f"{train_x.std().item():.6f}",
      torch.bincount(train_y).tolist())
train_loader = DataLoader(TensorDataset(train_x, train_y), batch_size=16, shuffle=True)
test_loader = DataLoader(TensorDataset(test_x, test_y), batch_size=16)

stn_model = Net()
loc_shapes = []
handle = stn_model.localization.register_forward_hook(lambda module, inp, out: loc_shapes.append(tuple(out.shape)))
cnn = nn.Sequential(
    nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(inplace=True),
    nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(inplace=True),
    nn.MaxPool2d(2, 2),
    nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(inplace=True),
    nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(inplace=True),
)
share_initial_weights({"stn": stn_model, "cnn": cnn})

optimizer = optim.SGD(stn_model.parameters(), lr=0.02, momentum=0.9)
for epoch in range(1, 3):
    train_stn(stn_model, optimizer, train_loader, epoch)
    test_stn(stn_model, test_loader)
handle.remove()
print("localisation output shapes", sorted(set(loc_shapes)), len(loc_shapes))

with torch.no_grad():
    stn_model.eval()
    data = next(iter(test_loader))[0]
    transformed, theta = stn_model.stn(data)
    print("theta mean", [f"{v:.6f}" for v in theta.mean(0).flatten().tolist()])
    print("transformed", tuple(transformed.shape), f"{transformed.sum().item():.6f}",
          f"{(transformed - data).abs().mean().item():.6f}")
    zoom = torch.tensor([[0.5, 0.0, 0.0], [0.0, 0.5, 0.25]]).expand(data.size(0), 2, 3)
    zoomed = F.grid_sample(data, F.affine_grid(zoom, data.size(), align_corners=False), mode="nearest",
                           padding_mode="border", align_corners=False)
    print("zoomed", f"{zoomed.sum().item():.6f}", f"{zoomed[0, 0, 0].sum().item():.6f}")


# ---- part 2: neural style transfer ----

def make_images(rng):
    """A content image (a bright disc on a smooth gradient) and a style image (coloured diagonal stripes)."""
    yy, xx = np.mgrid[0:24, 0:24].astype(np.float32) / 23.0
    content = np.stack([0.2 + 0.6 * xx, 0.3 + 0.4 * yy, 0.5 * np.ones_like(xx)])
    content[:, (yy - 0.5) ** 2 + (xx - 0.4) ** 2 < 0.06] = [[0.9], [0.8], [0.2]]
    stripes = (np.sin((xx + yy) * 12.0) > 0).astype(np.float32)
    style = np.stack([0.1 + 0.8 * stripes, 0.6 - 0.4 * stripes, 0.3 + 0.5 * stripes * xx])
    content += rng.uniform(-0.02, 0.02, content.shape)
    style += rng.uniform(-0.02, 0.02, style.shape)
    return (torch.from_numpy(np.clip(a, 0, 1).astype(np.float64)).unsqueeze(0) for a in (content, style))


class ContentLoss(nn.Module):
    def __init__(self, target):
        super().__init__()
        # detach the target: it is a fixed value, not a variable of the graph
        self.target = target.detach()

    def forward(self, input):
        self.loss = F.mse_loss(input, self.target)
        return input


def gram_matrix(input):
    a, b, c, d = input.size()  # batch, feature maps, height, width
    features = input.view(a * b, c * d)
    G = torch.mm(features, features.t())
    return G.div(a * b * c * d)


class StyleLoss(nn.Module):
    def __init__(self, target_feature):
        super().__init__()
        self.target = gram_matrix(target_feature).detach()

    def forward(self, input):
        G = gram_matrix(input)
        self.loss = F.mse_loss(G, self.target)
        return input


class Normalization(nn.Module):
    def __init__(self, mean, std):
        super().__init__()
        # view as [C x 1 x 1] to broadcast against [B x C x H x W] images
        self.mean = torch.tensor(mean).view(-1, 1, 1)
        self.std = torch.tensor(std).view(-1, 1, 1)

    def forward(self, img):
        return (img - self.mean) / self.std


content_layers_default = ["conv_3"]
style_layers_default = ["conv_1", "conv_2", "conv_3", "conv_4"]


def get_style_model_and_losses(cnn, mean, std, style_img, content_img, content_layers=content_layers_default,
                               style_layers=style_layers_default):
    normalization = Normalization(mean, std)
    content_losses = []
    style_losses = []
    model = nn.Sequential(normalization)

    i = 0  # incremented at every conv
    for layer in cnn.children():
        if isinstance(layer, nn.Conv2d):
            i += 1
            name = f"conv_{i}"
        elif isinstance(layer, nn.ReLU):
            name = f"relu_{i}"
            # the in-place ReLU would overwrite what ContentLoss and StyleLoss saw
            layer = nn.ReLU(inplace=False)
        elif isinstance(layer, nn.MaxPool2d):
            name = f"pool_{i}"
        elif isinstance(layer, nn.BatchNorm2d):
            name = f"bn_{i}"
        else:
            raise RuntimeError(f"Unrecognized layer: {layer.__class__.__name__}")
        model.add_module(name, layer)

        if name in content_layers:
            target = model(content_img).detach()
            content_loss = ContentLoss(target)
            model.add_module(f"content_loss_{i}", content_loss)
            content_losses.append(content_loss)

        if name in style_layers:
            target_feature = model(style_img).detach()
            style_loss = StyleLoss(target_feature)
            model.add_module(f"style_loss_{i}", style_loss)
            style_losses.append(style_loss)

    # trim off the layers after the last content and style losses
    for i in range(len(model) - 1, -1, -1):
        if isinstance(model[i], ContentLoss) or isinstance(model[i], StyleLoss):
            break
    model = model[:(i + 1)]
    return model, style_losses, content_losses


def get_input_optimizer(input_img):
    return optim.LBFGS([input_img])


def run_style_transfer(cnn, mean, std, content_img, style_img, input_img, num_steps=15, style_weight=1000.0,
                       content_weight=1.0):
    model, style_losses, content_losses = get_style_model_and_losses(cnn, mean, std, style_img, content_img)
    print("style model", [name for name, _ in model.named_children()])
    # optimise the input image, not the model's parameters
    input_img.requires_grad_(True)
    model.eval()
    model.requires_grad_(False)
    optimizer = get_input_optimizer(input_img)

    run = [0]
    while run[0] <= num_steps:

        def closure():
            # keep the image in [0, 1]
            with torch.no_grad():
                input_img.clamp_(0, 1)

            optimizer.zero_grad()
            model(input_img)
            style_score = 0
            content_score = 0

            for sl in style_losses:
                style_score += sl.loss
            for cl in content_losses:
                content_score += cl.loss

            style_score *= style_weight
            content_score *= content_weight

            loss = style_score + content_score
            loss.backward()

            run[0] += 1
            if run[0] % 5 == 0:
                print(f"run {run[0]}: style loss {style_score.item():.6f} content loss {content_score.item():.6f}")

            return style_score + content_score

        optimizer.step(closure)

    # a last correction
    with torch.no_grad():
        input_img.clamp_(0, 1)
    return input_img


content_img, style_img = make_images(np.random.default_rng(1))
print("images", tuple(content_img.shape), f"{content_img.mean().item():.6f}", f"{style_img.mean().item():.6f}")
cnn_normalization_mean = [0.485, 0.456, 0.406]
cnn_normalization_std = [0.229, 0.224, 0.225]
cnn = cnn.eval().double()  # L-BFGS on this loss amplifies float32's rounding within a few evaluations

feature_shapes = {}


def record_shape(name):
    def hook(module, input, output):
        feature_shapes[name] = tuple(output.shape)
    return hook


hooks = [layer.register_forward_hook(record_shape(name)) for name, layer in cnn.named_children()
         if isinstance(layer, nn.Conv2d)]
with torch.no_grad():
    cnn(content_img)
for h in hooks:
    h.remove()
print("feature shapes", feature_shapes)

input_img = content_img.clone()
output = run_style_transfer(cnn, cnn_normalization_mean, cnn_normalization_std, content_img, style_img, input_img)
print("output", tuple(output.shape), f"{output.mean().item():.6f}", f"{output.min().item():.6f}",
      f"{output.max().item():.6f}", f"{(output - content_img).abs().mean().item():.6f}", output.requires_grad)
