"""A Wasserstein GAN with gradient penalty in the idioms of the public WGAN-GP code (improved training of WGANs), run
unchanged under torch and under `python -m retrograd.run`: a critic without a sigmoid, the penalty on random
interpolates (alpha drawn per sample, `expand(...).contiguous().view(real_data.size())`) made with
`requires_grad_(True)` and differentiated by `torch.autograd.grad(outputs=..., inputs=..., grad_outputs=
torch.ones_like(...), create_graph=True, retain_graph=True, only_inputs=True)[0]`, viewed flat by
`gradients.view(gradients.size(0), -1)` and its `.norm(2, dim=1)` pushed to one, several critic steps per generator
step with `p.requires_grad = False` on the critic while the generator trains, `backward(mone)` / `backward(one)` on
the means, Adam with `betas=(0.5, 0.9)` (RMSprop with weight clipping for the original WGAN under `--clip`); the toy
task's MLPs, or gan_mnist's strided convolutions and transposed convolutions on 8x8 images under `--conv`. Prints the
critic's and generator's costs and the Wasserstein estimate each iteration; `WEIGHTS=path` shares the initial weights
(tests/programs/_draws.py shares the noise)."""

import argparse

import numpy as np
import torch
import torch.autograd as autograd
import torch.nn as nn
import torch.optim as optim
from _weights import share_initial_weights

parser = argparse.ArgumentParser()
parser.add_argument("--clip", action="store_true", help="the original WGAN: RMSprop and weight clipping")
parser.add_argument("--conv", action="store_true", help="gan_mnist's convolutional pair on 8x8 images")
args = parser.parse_args()

DIM, BATCH_SIZE, CRITIC_ITERS, ITERS, LAMBDA = (8 if args.conv else 32), 16, 3, 6, 0.1
torch.manual_seed(1)


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(nn.Linear(2, DIM), nn.ReLU(True), nn.Linear(DIM, DIM), nn.ReLU(True),
                                  nn.Linear(DIM, 2))

    def forward(self, noise, real_data):  # real_data: the toy's FIXED_GENERATOR option returns it plus the noise
        return self.main(noise)


class ConvGenerator(nn.Module):
    def __init__(self):
        super().__init__()
        self.preprocess = nn.Sequential(nn.Linear(2, 4 * 2 * 2 * DIM), nn.ReLU(True))
        self.block1 = nn.Sequential(nn.ConvTranspose2d(4 * DIM, 2 * DIM, 4, stride=2, padding=1), nn.ReLU(True))
        self.deconv_out = nn.ConvTranspose2d(2 * DIM, 1, 4, stride=2, padding=1)

    def forward(self, noise, real_data):
        output = self.preprocess(noise).view(-1, 4 * DIM, 2, 2)
        output = self.block1(output)
        return torch.tanh(self.deconv_out(output))


class ConvDiscriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(nn.Conv2d(1, DIM, 3, stride=2, padding=1), nn.LeakyReLU(0.2),
                                  nn.Conv2d(DIM, 2 * DIM, 3, stride=2, padding=1), nn.LeakyReLU(0.2))
        self.output = nn.Linear(2 * 2 * 2 * DIM, 1)

    def forward(self, input):
        out = self.main(input)
        out = out.view(-1, 2 * 2 * 2 * DIM)
        return self.output(out).view(-1)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(nn.Linear(2, DIM), nn.ReLU(True), nn.Linear(DIM, DIM), nn.ReLU(True),
                                  nn.Linear(DIM, 1))

    def forward(self, inputs):
        return self.main(inputs).view(-1)


def weights_init(m):
    if m.__class__.__name__.find("Linear") != -1:
        m.weight.data.normal_(0.0, 0.02)
        m.bias.data.fill_(0)


def inf_train_gen():
    """Eight gaussians on a circle, from NumPy's generator, as the toy task draws them."""
    rng = np.random.default_rng(0)
    scale = 2.0
    centers = [(1, 0), (-1, 0), (0, 1), (0, -1), (1 / np.sqrt(2), 1 / np.sqrt(2)), (1 / np.sqrt(2), -1 / np.sqrt(2)),
               (-1 / np.sqrt(2), 1 / np.sqrt(2)), (-1 / np.sqrt(2), -1 / np.sqrt(2))]
    centers = [(scale * x, scale * y) for x, y in centers]
    while True:
        dataset = []
        for _ in range(BATCH_SIZE):
            point = rng.standard_normal(2) * 0.02
            center = centers[rng.integers(len(centers))]
            dataset.append(point + np.array(center))
        yield np.array(dataset, dtype="float32") / 1.414


def inf_image_gen():
    """8x8 images in [-1, 1]: a blob at a random place (NumPy's generator)."""
    rng = np.random.default_rng(0)
    ys, xs = np.mgrid[0:8, 0:8]
    while True:
        centres = rng.uniform(2, 6, (BATCH_SIZE, 2))
        images = np.exp(-((ys - centres[:, :1, None]) ** 2 + (xs - centres[:, 1:, None]) ** 2) / 4.0)
        yield (2 * images[:, None] - 1).astype("float32")


def calc_gradient_penalty(netD, real_data, fake_data):
    alpha = torch.rand(BATCH_SIZE, 1)
    alpha = alpha.expand(BATCH_SIZE, real_data.nelement() // BATCH_SIZE).contiguous().view(real_data.size())
    interpolates = alpha * real_data + ((1 - alpha) * fake_data)
    interpolates.requires_grad_(True)
    disc_interpolates = netD(interpolates)
    gradients = autograd.grad(outputs=disc_interpolates, inputs=interpolates,
                              grad_outputs=torch.ones_like(disc_interpolates),
                              create_graph=True, retain_graph=True, only_inputs=True)[0]
    gradients = gradients.view(gradients.size(0), -1)
    return ((gradients.norm(2, dim=1) - 1) ** 2).mean() * LAMBDA


netG, netD = (ConvGenerator(), ConvDiscriminator()) if args.conv else (Generator(), Discriminator())
netD.apply(weights_init)
netG.apply(weights_init)
share_initial_weights({"G": netG, "D": netD})
print(netG)
if args.clip:
    optimizerD, optimizerG = optim.RMSprop(netD.parameters(), lr=5e-4), optim.RMSprop(netG.parameters(), lr=5e-4)
else:
    optimizerD = optim.Adam(netD.parameters(), lr=1e-3, betas=(0.5, 0.9))
    optimizerG = optim.Adam(netG.parameters(), lr=1e-3, betas=(0.5, 0.9))
one = torch.tensor(1, dtype=torch.float)
mone = one * -1

data = inf_image_gen() if args.conv else inf_train_gen()
for iteration in range(ITERS):
    # (1) update the critic
    for p in netD.parameters():
        p.requires_grad = True
    for iter_d in range(CRITIC_ITERS):
        real_data_v = torch.from_numpy(next(data))
        netD.zero_grad()
        D_real = netD(real_data_v).mean()
        D_real.backward(mone)
        noise = torch.randn(BATCH_SIZE, 2)
        with torch.no_grad():
            noisev = noise  # totally freeze netG
        fake = netG(noisev, real_data_v).data
        D_fake = netD(fake).mean()
        D_fake.backward(one)
        if args.clip:
            D_cost = D_fake - D_real
        else:
            gradient_penalty = calc_gradient_penalty(netD, real_data_v.data, fake.data)
            gradient_penalty.backward()
            D_cost = D_fake - D_real + gradient_penalty
        Wasserstein_D = D_real - D_fake
        optimizerD.step()
        if args.clip:
            for p in netD.parameters():
                p.data.clamp_(-0.01, 0.01)

    # (2) update the generator
    for p in netD.parameters():
        p.requires_grad = False  # avoid computation
    netG.zero_grad()
    real_data_v = torch.from_numpy(next(data))
    noisev = torch.randn(BATCH_SIZE, 2)
    fake = netG(noisev, real_data_v)
    G = netD(fake).mean()
    G.backward(mone)
    G_cost = -G
    optimizerG.step()
    print(f"iter {iteration} D_cost {D_cost.item():.6f} G_cost {G_cost.item():.6f} "
          f"Wasserstein {Wasserstein_D.item():.6f} grad_fn {type(D_cost.grad_fn).__name__}")
print(f"generator sample mean {netG(torch.zeros(4, 2), None).abs().mean().item():.6f}")
