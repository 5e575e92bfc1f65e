"""A DCGAN in the idioms of PyTorch's examples/dcgan, run unchanged under torch and under `python -m retrograd.run`:
`weights_init` applied by `net.apply` that picks layers by `m.__class__.__name__.find('Conv')` and fills them with
`nn.init.normal_(m.weight.data, 0.0, 0.02)`, a generator of `ConvTranspose2d` + `BatchNorm2d` + `ReLU` ending in
`Tanh`, a discriminator of strided `Conv2d` + `LeakyReLU(0.2, inplace=True)` ending in `Sigmoid`, `nn.BCELoss`,
labels made by `torch.full(..., real_label, dtype=torch.float)` and refilled in place by `label.fill_`, the fake
batch scored twice (`netD(fake.detach())` for D, `netD(fake)` for G), two Adam optimisers with `betas=(0.5,
0.999)`, `D(x)` and `D(G(z))` read with `.mean().item()`, and a fixed noise batch sampled under `torch.no_grad()`.
`WEIGHTS=path` shares the initial weights between the two runs (tests/programs/_draws.py shares the noise)."""

# ruff: noqa: UP031 - the example's own %-format logging
import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim
import torch.utils.data
from _weights import share_initial_weights

parser = argparse.ArgumentParser()
parser.add_argument("--batchSize", type=int, default=16)
parser.add_argument("--nz", type=int, default=8, help="size of the latent z vector")
parser.add_argument("--ngf", type=int, default=8)
parser.add_argument("--ndf", type=int, default=8)
parser.add_argument("--niter", type=int, default=2, help="number of epochs to train for")
parser.add_argument("--lr", type=float, default=0.0002)
parser.add_argument("--beta1", type=float, default=0.5)
parser.add_argument("--manualSeed", type=int, default=999)
opt = parser.parse_args()

torch.manual_seed(opt.manualSeed)
device = torch.device("cpu")
nz, ngf, ndf, nc = opt.nz, opt.ngf, opt.ndf, 1


def make_images(n, seed):
    """16x16 images in [-1, 1] (the range Tanh produces): a blob at a random place (NumPy's generator)."""
    rng = np.random.default_rng(seed)
    ys, xs = np.mgrid[0:16, 0:16]
    centres = rng.uniform(4, 12, (n, 2))
    images = np.exp(-((ys - centres[:, :1, None]) ** 2 + (xs - centres[:, 1:, None]) ** 2) / 8.0)
    return torch.from_numpy(2 * images[:, None] - 1).float()


dataset = torch.utils.data.TensorDataset(make_images(64, 0))
dataloader = torch.utils.data.DataLoader(dataset, batch_size=opt.batchSize, shuffle=True)


def weights_init(m):
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        nn.init.normal_(m.weight.data, 0.0, 0.02)
    elif classname.find("BatchNorm") != -1:
        nn.init.normal_(m.weight.data, 1.0, 0.02)
        nn.init.constant_(m.bias.data, 0)


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 4, 4, 1, 0, bias=False),  # 4x4
            nn.BatchNorm2d(ngf * 4),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False),  # 8x8
            nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, nc, 4, 2, 1, bias=False),  # 16x16
            nn.Tanh(),
        )

    def forward(self, input):
        return self.main(input)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False),  # 8x8
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),  # 4x4
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False),  # 1x1
            nn.Sigmoid(),
        )

    def forward(self, input):
        output = self.main(input)
        return output.view(-1, 1).squeeze(1)


netG = Generator().to(device)
netG.apply(weights_init)
netD = Discriminator().to(device)
netD.apply(weights_init)
share_initial_weights({"G": netG, "D": netD})

criterion = nn.BCELoss()
fixed_noise = torch.randn(opt.batchSize, nz, 1, 1, device=device)
real_label, fake_label = 1, 0
optimizerD = optim.Adam(netD.parameters(), lr=opt.lr, betas=(opt.beta1, 0.999))
optimizerG = optim.Adam(netG.parameters(), lr=opt.lr, betas=(opt.beta1, 0.999))

for epoch in range(opt.niter):
    for i, data in enumerate(dataloader, 0):
        # (1) Update D network: maximize log(D(x)) + log(1 - D(G(z)))
        netD.zero_grad()
        real_cpu = data[0].to(device)
        batch_size = real_cpu.size(0)
        label = torch.full((batch_size,), real_label, dtype=real_cpu.dtype, device=device)
        output = netD(real_cpu)
        errD_real = criterion(output, label)
        errD_real.backward()
        D_x = output.mean().item()

        noise = torch.randn(batch_size, nz, 1, 1, device=device)
        fake = netG(noise)
        label.fill_(fake_label)
        output = netD(fake.detach())
        errD_fake = criterion(output, label)
        errD_fake.backward()
        D_G_z1 = output.mean().item()
        errD = errD_real + errD_fake
        optimizerD.step()

        # (2) Update G network: maximize log(D(G(z)))
        netG.zero_grad()
        label.fill_(real_label)  # fake labels are real for generator cost
        output = netD(fake)
        errG = criterion(output, label)
        errG.backward()
        D_G_z2 = output.mean().item()
        optimizerG.step()

        print("[%d/%d][%d/%d] Loss_D: %.6f Loss_G: %.6f D(x): %.6f D(G(z)): %.6f / %.6f"
              % (epoch, opt.niter, i, len(dataloader), errD.item(), errG.item(), D_x, D_G_z1, D_G_z2))

    with torch.no_grad():
        fake = netG(fixed_noise).detach().cpu()
    print("fixed noise samples", tuple(fake.shape), "mean %.6f std %.6f" % (fake.mean().item(), fake.std().item()))
    print("running mean of D's batch norm %.6f" % netD.main[3].running_mean.abs().sum().item())
