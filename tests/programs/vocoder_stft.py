"""A tiny neural vocoder trained with adversarial, feature-matching, mel and multi-resolution STFT losses, in the idioms
of HiFi-GAN (jik876/hifi-gan), Parallel WaveGAN (kan-bayashi/ParallelWaveGAN), MelGAN (descriptinc/melgan-neurips)
and the torchaudio-free audio utilities of public TTS code, run unchanged under torch and under `python -m
retrograd.run`. Part 1, signal processing: mu-law companding (`torch.sign(x) * torch.log1p(mu * x.abs()) /
math.log1p(mu)` and its inverse) with quantisation; an `torch.fft.rfft` low-pass filter and `irfft(n=...)`; the
`torch.stft` / `torch.istft` round trip with `torch.hann_window`; a mel filterbank of triangular filters built by
hand in NumPy and applied by `torch.matmul` after HiFi-GAN's `F.pad(mode="reflect")` and `torch.sqrt(spec.real.pow(2)
+ spec.imag.pow(2) + 1e-9)`. Complex autograd through `stft` is checked (in float64): the gradient of a loss on the
magnitude taken by `.abs()` against the one by `torch.sqrt(real**2 + imag**2)`, and `torch.autograd.gradcheck` of a
float64 stft magnitude. Part 2, the GAN: a generator of `nn.Conv1d`, `ConvTranspose1d` upsampling and residual
dilated `Conv1d` blocks with `F.leaky_relu(x, 0.1)` under `torch.nn.utils.parametrizations.weight_norm`; a MelGAN
scale discriminator under `torch.nn.utils.spectral_norm` and one on the `nn.AvgPool1d`-downsampled signal under
weight_norm, and a HiFi-GAN period discriminator (`F.pad(x, (0, n_pad), "reflect")` and a view into 2-d) of
`nn.Conv2d`; each returning its list of feature maps. Losses: least-squares GAN losses `torch.mean((1 - dr) ** 2)` /
`torch.mean(dg ** 2)`, feature matching `torch.mean(torch.abs(rl - gl))` over the lists, mel L1, and Parallel
WaveGAN's multi-resolution STFT loss (spectral convergence `torch.norm(y_mag - x_mag, p="fro") / torch.norm(y_mag,
p="fro")` and log-magnitude L1, magnitudes by `torch.sqrt(torch.clamp(real ** 2 + imag ** 2, min=1e-7))`, windows as
registered buffers). AdamW (the generator) and Adam (the discriminators) with `betas=(0.8, 0.99)` under
`ExponentialLR(gamma=0.999)` and `clip_grad_norm_`. Part 3, inference: `remove_parametrizations` on every
weight-normed layer, the same waveform under `torch.inference_mode()`, and the mu-law code of the generated audio.
Waveforms are harmonic tones from NumPy's seeded generator; prints the losses a few times per part; `WEIGHTS=path`
shares the initial weights."""

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from _weights import share_initial_weights
from torch.nn.utils import parametrizations, parametrize, spectral_norm

torch.manual_seed(0)
SR, SEGMENT, BATCH, STEPS = 4000, 1024, 3, 6
N_FFT, HOP, WIN, N_MELS = 256, 64, 256, 16

rng = np.random.default_rng(0)


def make_tones(n):
    """n harmonic tones (random pitch, decaying harmonics, an envelope) with a little noise, as float32 (n, T)."""
    t = np.arange(SEGMENT) / SR
    waves = []
    for _ in range(n):
        f0 = rng.uniform(110.0, 440.0)
        wave = sum(0.5 ** k * np.sin(2 * np.pi * f0 * (k + 1) * t + rng.uniform(0, 2 * np.pi)) for k in range(4))
        envelope = np.minimum(1.0, 4 * t / t[-1]) * np.exp(-2.0 * t)
        waves.append(0.4 * envelope * wave + 0.01 * rng.normal(0.0, 1.0, SEGMENT))
    return torch.from_numpy(np.stack(waves).astype(np.float32))


# ---------------------------------------------------------------- part 1: signal processing
def mu_law_encode(x, mu=255):
    return torch.sign(x) * torch.log1p(mu * torch.abs(x)) / math.log1p(mu)


def mu_law_decode(y, mu=255):
    return torch.sign(y) * (torch.pow(1 + mu, torch.abs(y)) - 1) / mu


def quantize(y, mu=255):
    return ((y + 1) / 2 * mu + 0.5).long()


def hz_to_mel(f):
    return 2595.0 * np.log10(1.0 + f / 700.0)


def mel_to_hz(m):
    return 700.0 * (10.0 ** (m / 2595.0) - 1.0)


def mel_filterbank(sr, n_fft, n_mels, fmin=0.0, fmax=None):
    """HTK-style triangular filters (n_mels, n_fft // 2 + 1), Slaney-normalised by their bandwidth."""
    fmax = fmax or sr / 2
    fft_freqs = np.linspace(0, sr / 2, n_fft // 2 + 1)
    hz = mel_to_hz(np.linspace(hz_to_mel(fmin), hz_to_mel(fmax), n_mels + 2))
    weights = np.zeros((n_mels, len(fft_freqs)))
    for i in range(n_mels):
        lower = (fft_freqs - hz[i]) / (hz[i + 1] - hz[i])
        upper = (hz[i + 2] - fft_freqs) / (hz[i + 2] - hz[i + 1])
        weights[i] = np.maximum(0, np.minimum(lower, upper))
    weights *= (2.0 / (hz[2:n_mels + 2] - hz[:n_mels]))[:, None]
    return weights


mel_basis = torch.from_numpy(mel_filterbank(SR, N_FFT, N_MELS)).float()
hann_window = torch.hann_window(WIN)


def dynamic_range_compression(x, C=1, clip_val=1e-5):
    return torch.log(torch.clamp(x, min=clip_val) * C)


def mel_spectrogram(y):
    """HiFi-GAN's mel_spectrogram: reflect-pad by (n_fft - hop) / 2, stft without centring, log of mel magnitudes."""
    pad = int((N_FFT - HOP) / 2)
    y = F.pad(y.unsqueeze(1), (pad, pad), mode="reflect").squeeze(1)
    spec = torch.stft(y, N_FFT, hop_length=HOP, win_length=WIN, window=hann_window, center=False,
                      pad_mode="reflect", normalized=False, onesided=True, return_complex=True)
    spec = torch.sqrt(spec.real.pow(2) + spec.imag.pow(2) + 1e-9)
    return dynamic_range_compression(torch.matmul(mel_basis, spec))


audio = make_tones(BATCH)
val_audio = make_tones(2)
print(f"audio {tuple(audio.shape)} peak {audio.abs().max().item():.6f} rms {audio.pow(2).mean().sqrt().item():.6f}")

encoded = mu_law_encode(audio)
codes = quantize(encoded)
decoded = mu_law_decode(codes.float() / 255 * 2 - 1)
print(f"mu-law codes min {codes.min().item()} max {codes.max().item()} dtype {codes.dtype} "
      f"round-trip error {(decoded - audio).abs().max().item():.6f} encoded mean {encoded.mean().item():.6f}")

spectrum = torch.fft.rfft(audio)
cutoff = int(800 / SR * SEGMENT)
lowpassed = torch.fft.irfft(spectrum * (torch.arange(spectrum.shape[-1]) < cutoff), n=SEGMENT)
energy_kept = lowpassed.pow(2).sum() / audio.pow(2).sum()
print(f"rfft {tuple(spectrum.shape)} {spectrum.dtype} energy kept {energy_kept.item():.6f} "
      f"irfft(rfft) error {(torch.fft.irfft(spectrum, n=SEGMENT) - audio).abs().max().item():.3e}")

stft = torch.stft(audio, N_FFT, HOP, WIN, window=hann_window, return_complex=True)
restored = torch.istft(stft, N_FFT, HOP, WIN, window=hann_window, length=SEGMENT)
print(f"stft {tuple(stft.shape)} {stft.dtype} |X| mean {stft.abs().mean().item():.6f} "
      f"istft error {(restored - audio).abs().max().item():.3e}")

mels = mel_spectrogram(audio)
print(f"mel basis {tuple(mel_basis.shape)} sum {mel_basis.sum().item():.6f} mels {tuple(mels.shape)} "
      f"mean {mels.mean().item():.6f} min {mels.min().item():.6f} max {mels.max().item():.6f}")

# complex autograd through stft: the magnitude by abs() and by sqrt(real^2 + imag^2) give the same gradient (in
# float64: the log of the quiet bins divides by magnitudes near 1e-3, which float32's rounding would amplify)
grads = []
audio64, window64 = audio.double(), torch.hann_window(128, dtype=torch.float64)
for magnitude in (lambda z: torch.clamp(z.abs(), min=1e-7), lambda z: torch.sqrt(z.real ** 2 + z.imag ** 2)):
    x = (audio64 + 0.05).clone().requires_grad_(True)
    z = torch.stft(x, 128, 32, 128, window=window64, return_complex=True)
    loss = F.l1_loss(torch.log(magnitude(z)), torch.log(magnitude(torch.stft(
        audio64, 128, 32, 128, window=window64, return_complex=True)) + 1e-3))
    loss.backward()
    grads.append(x.grad)
    print(f"stft grad loss {loss.item():.6f} grad norm {x.grad.norm().item():.6f} grad_fn {z.grad_fn.name()}")
print(f"abs vs sqrt gradient max difference {(grads[0] - grads[1]).abs().max().item():.3e}")
probe = torch.from_numpy(rng.normal(0.0, 1.0, (2, 40))).requires_grad_(True)
print("gradcheck stft magnitude:", torch.autograd.gradcheck(
    lambda x: torch.stft(x, 16, 4, window=torch.hann_window(16, dtype=torch.float64), return_complex=True).abs(),
    (probe,)))
print("gradcheck istft:", torch.autograd.gradcheck(
    lambda x: torch.istft(torch.stft(x, 16, 4, window=torch.hann_window(16, dtype=torch.float64),
                                     return_complex=True) * 0.5, 16, 4,
                          window=torch.hann_window(16, dtype=torch.float64), length=40),
    (probe,)))
spec_grad = torch.stft(probe, 16, 4, window=torch.hann_window(16, dtype=torch.float64), return_complex=True)
(gz,) = torch.autograd.grad(spec_grad.abs().pow(2).sum(), probe)
print(f"d sum |X|^2 / dx: norm {gz.norm().item():.6f} at sample 5 {gz[0, 5].item():.6f} "
      f"dtype {gz.dtype}")


# ---------------------------------------------------------------- part 2: generator, discriminators, losses
LRELU_SLOPE = 0.1


def init_weights(m, mean=0.0, std=0.01):
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        m.weight.data.normal_(mean, std)


def get_padding(kernel_size, dilation=1):
    return int((kernel_size * dilation - dilation) / 2)


class ResBlock(nn.Module):
    def __init__(self, channels, kernel_size=3, dilation=(1, 3)):
        super().__init__()
        self.convs1 = nn.ModuleList([
            parametrizations.weight_norm(nn.Conv1d(channels, channels, kernel_size, 1, dilation=d,
                                                   padding=get_padding(kernel_size, d))) for d in dilation])
        self.convs2 = nn.ModuleList([
            parametrizations.weight_norm(nn.Conv1d(channels, channels, kernel_size, 1, dilation=1,
                                                   padding=get_padding(kernel_size, 1))) for _ in dilation])
        self.convs1.apply(init_weights)
        self.convs2.apply(init_weights)

    def forward(self, x):
        for c1, c2 in zip(self.convs1, self.convs2):
            xt = F.leaky_relu(x, LRELU_SLOPE)
            xt = c1(xt)
            xt = F.leaky_relu(xt, LRELU_SLOPE)
            xt = c2(xt)
            x = xt + x
        return x


class Generator(nn.Module):
    def __init__(self, channels=16, rates=(8, 8)):
        super().__init__()
        self.conv_pre = parametrizations.weight_norm(nn.Conv1d(N_MELS, channels, 7, 1, padding=3))
        self.ups = nn.ModuleList()
        self.resblocks = nn.ModuleList()
        ch = channels
        for u in rates:
            self.ups.append(parametrizations.weight_norm(
                nn.ConvTranspose1d(ch, ch // 2, u * 2, u, padding=u // 2)))
            ch //= 2
            self.resblocks.append(ResBlock(ch))
        self.conv_post = parametrizations.weight_norm(nn.Conv1d(ch, 1, 7, 1, padding=3))
        self.ups.apply(init_weights)
        self.conv_post.apply(init_weights)

    def forward(self, x):
        x = self.conv_pre(x)
        for up, block in zip(self.ups, self.resblocks):
            x = F.leaky_relu(x, LRELU_SLOPE)
            x = block(up(x))
        x = F.leaky_relu(x)
        return torch.tanh(self.conv_post(x))

    def remove_weight_norm(self):
        for module in self.modules():
            if parametrize.is_parametrized(module, "weight"):
                parametrize.remove_parametrizations(module, "weight")


class DiscriminatorS(nn.Module):
    """MelGAN's scale discriminator: grouped strided convolutions, spectral or weight norm."""

    def __init__(self, use_spectral_norm=False):
        super().__init__()
        norm_f = spectral_norm if use_spectral_norm else parametrizations.weight_norm
        self.convs = nn.ModuleList([
            norm_f(nn.Conv1d(1, 8, 15, 1, padding=7)),
            norm_f(nn.Conv1d(8, 16, 41, 4, groups=4, padding=20)),
            norm_f(nn.Conv1d(16, 16, 41, 4, groups=8, padding=20)),
            norm_f(nn.Conv1d(16, 16, 5, 1, padding=2)),
        ])
        self.conv_post = norm_f(nn.Conv1d(16, 1, 3, 1, padding=1))

    def forward(self, x):
        fmap = []
        for layer in self.convs:
            x = F.leaky_relu(layer(x), LRELU_SLOPE)
            fmap.append(x)
        x = self.conv_post(x)
        fmap.append(x)
        return torch.flatten(x, 1, -1), fmap


class DiscriminatorP(nn.Module):
    """HiFi-GAN's period discriminator: the signal reflect-padded to a multiple of the period, viewed in 2-d."""

    def __init__(self, period, kernel_size=5, stride=3):
        super().__init__()
        self.period = period
        self.convs = nn.ModuleList([
            parametrizations.weight_norm(nn.Conv2d(1, 8, (kernel_size, 1), (stride, 1),
                                                   padding=(get_padding(5, 1), 0))),
            parametrizations.weight_norm(nn.Conv2d(8, 16, (kernel_size, 1), (stride, 1),
                                                   padding=(get_padding(5, 1), 0))),
            parametrizations.weight_norm(nn.Conv2d(16, 16, (kernel_size, 1), 1, padding=(2, 0))),
        ])
        self.conv_post = parametrizations.weight_norm(nn.Conv2d(16, 1, (3, 1), 1, padding=(1, 0)))

    def forward(self, x):
        fmap = []
        b, c, t = x.shape
        if t % self.period != 0:
            n_pad = self.period - (t % self.period)
            x = F.pad(x, (0, n_pad), "reflect")
            t = t + n_pad
        x = x.view(b, c, t // self.period, self.period)
        for layer in self.convs:
            x = F.leaky_relu(layer(x), LRELU_SLOPE)
            fmap.append(x)
        x = self.conv_post(x)
        fmap.append(x)
        return torch.flatten(x, 1, -1), fmap


class MultiDiscriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.discriminators = nn.ModuleList([DiscriminatorS(use_spectral_norm=True), DiscriminatorS(),
                                             DiscriminatorP(3), DiscriminatorP(5)])
        self.meanpool = nn.AvgPool1d(4, 2, padding=2)

    def forward(self, y, y_hat):
        y_d_rs, y_d_gs, fmap_rs, fmap_gs = [], [], [], []
        for i, d in enumerate(self.discriminators):
            if i == 1:  # the second scale sees the pooled signal
                y, y_hat = self.meanpool(y), self.meanpool(y_hat)
            y_d_r, fmap_r = d(y)
            y_d_g, fmap_g = d(y_hat)
            y_d_rs.append(y_d_r)
            fmap_rs.append(fmap_r)
            y_d_gs.append(y_d_g)
            fmap_gs.append(fmap_g)
        return y_d_rs, y_d_gs, fmap_rs, fmap_gs


def feature_loss(fmap_r, fmap_g):
    loss = 0
    for dr, dg in zip(fmap_r, fmap_g):
        for rl, gl in zip(dr, dg):
            loss += torch.mean(torch.abs(rl - gl))
    return loss * 2


def discriminator_loss(disc_real_outputs, disc_generated_outputs):
    loss = 0
    r_losses, g_losses = [], []
    for dr, dg in zip(disc_real_outputs, disc_generated_outputs):
        r_loss = torch.mean((1 - dr) ** 2)
        g_loss = torch.mean(dg ** 2)
        loss += r_loss + g_loss
        r_losses.append(r_loss.item())
        g_losses.append(g_loss.item())
    return loss, r_losses, g_losses


def generator_loss(disc_outputs):
    loss = 0
    gen_losses = []
    for dg in disc_outputs:
        g = torch.mean((1 - dg) ** 2)
        gen_losses.append(g)
        loss += g
    return loss, gen_losses


def stft_magnitude(x, fft_size, hop_size, win_length, window):
    """Parallel WaveGAN's stft(): magnitudes (B, frames, fft_size // 2 + 1), clamped away from zero."""
    x_stft = torch.stft(x, fft_size, hop_size, win_length, window, return_complex=True)
    real = x_stft.real
    imag = x_stft.imag
    return torch.sqrt(torch.clamp(real ** 2 + imag ** 2, min=1e-7)).transpose(2, 1)


class SpectralConvergengeLoss(nn.Module):
    def forward(self, x_mag, y_mag):
        return torch.norm(y_mag - x_mag, p="fro") / torch.norm(y_mag, p="fro")


class LogSTFTMagnitudeLoss(nn.Module):
    def forward(self, x_mag, y_mag):
        return F.l1_loss(torch.log(y_mag), torch.log(x_mag))


class STFTLoss(nn.Module):
    def __init__(self, fft_size=1024, shift_size=120, win_length=600, window="hann_window"):
        super().__init__()
        self.fft_size = fft_size
        self.shift_size = shift_size
        self.win_length = win_length
        self.spectral_convergenge_loss = SpectralConvergengeLoss()
        self.log_stft_magnitude_loss = LogSTFTMagnitudeLoss()
        self.register_buffer("window", getattr(torch, window)(win_length))

    def forward(self, x, y):
        x_mag = stft_magnitude(x, self.fft_size, self.shift_size, self.win_length, self.window)
        y_mag = stft_magnitude(y, self.fft_size, self.shift_size, self.win_length, self.window)
        return self.spectral_convergenge_loss(x_mag, y_mag), self.log_stft_magnitude_loss(x_mag, y_mag)


class MultiResolutionSTFTLoss(nn.Module):
    def __init__(self, fft_sizes=(256, 128, 64), hop_sizes=(32, 16, 8), win_lengths=(160, 80, 40),
                 window="hann_window"):
        super().__init__()
        self.stft_losses = nn.ModuleList(
            [STFTLoss(fs, ss, wl, window) for fs, ss, wl in zip(fft_sizes, hop_sizes, win_lengths)])

    def forward(self, x, y):
        sc_loss, mag_loss = 0.0, 0.0
        for f in self.stft_losses:
            sc_l, mag_l = f(x, y)
            sc_loss += sc_l
            mag_loss += mag_l
        return sc_loss / len(self.stft_losses), mag_loss / len(self.stft_losses)


generator, mpd = Generator(), MultiDiscriminator()
share_initial_weights({"generator": generator, "mpd": mpd})
stft_criterion = MultiResolutionSTFTLoss()
print(f"generator parameters {sum(p.numel() for p in generator.parameters())} "
      f"discriminator parameters {sum(p.numel() for p in mpd.parameters())} "
      f"buffers {sorted(name for name, _ in stft_criterion.named_buffers())}")

optim_g = torch.optim.AdamW(generator.parameters(), 2e-3, betas=(0.8, 0.99))
optim_d = torch.optim.Adam(mpd.parameters(), 2e-3, betas=(0.8, 0.99))
scheduler_g = torch.optim.lr_scheduler.ExponentialLR(optim_g, gamma=0.999)
scheduler_d = torch.optim.lr_scheduler.ExponentialLR(optim_d, gamma=0.999)

y = audio.unsqueeze(1)
y_mel = mel_spectrogram(audio)
for step in range(STEPS):
    y_g_hat = generator(y_mel)
    y_g_hat_mel = mel_spectrogram(y_g_hat.squeeze(1))

    optim_d.zero_grad()
    y_d_rs, y_d_gs, _, _ = mpd(y, y_g_hat.detach())
    loss_disc, r_losses, g_losses = discriminator_loss(y_d_rs, y_d_gs)
    loss_disc.backward()
    d_norm = torch.nn.utils.clip_grad_norm_(mpd.parameters(), 10.0)
    optim_d.step()

    optim_g.zero_grad()
    loss_mel = F.l1_loss(y_mel, y_g_hat_mel) * 45
    sc_loss, mag_loss = stft_criterion(y_g_hat.squeeze(1), audio)
    y_d_rs, y_d_gs, fmap_rs, fmap_gs = mpd(y, y_g_hat)
    loss_fm = feature_loss(fmap_rs, fmap_gs)
    loss_gen, _ = generator_loss(y_d_gs)
    loss_gen_all = loss_gen + loss_fm + loss_mel + 2.5 * (sc_loss + mag_loss)
    loss_gen_all.backward()
    g_norm = torch.nn.utils.clip_grad_norm_(generator.parameters(), 10.0)
    optim_g.step()
    scheduler_g.step()
    scheduler_d.step()
    if step % 2 == 0 or step == STEPS - 1:
        print(f"step {step} disc {loss_disc.item():.6f} (real {r_losses[0]:.6f} fake {g_losses[0]:.6f}) "
              f"gen {loss_gen.item():.6f} fm {loss_fm.item():.6f} mel {loss_mel.item():.6f} "
              f"sc {sc_loss.item():.6f} mag {mag_loss.item():.6f} |g| {g_norm.item():.4f} |d| {d_norm.item():.4f} "
              f"lr {scheduler_g.get_last_lr()[0]:.8f}")

with torch.no_grad():
    val_mel = mel_spectrogram(val_audio)
    val_hat = generator(val_mel).squeeze(1)
    sc, mag = stft_criterion(val_hat, val_audio)
    print(f"validation mel L1 {F.l1_loss(mel_spectrogram(val_hat), val_mel).item():.6f} sc {sc.item():.6f} "
          f"mag {mag.item():.6f}")

# ---------------------------------------------------------------- part 3: inference without weight norm
generator.eval()
with torch.no_grad():
    before = generator(val_mel)
generator.remove_weight_norm()
names = sorted({name.split(".")[-1] for name, _ in generator.named_parameters()})
with torch.inference_mode():
    after = generator(val_mel)
    wave = after.squeeze(1)
    codes = quantize(mu_law_encode(wave.clamp(-1, 1)))
print(f"removed weight norm: parameter names {names} same output {torch.allclose(before, after, atol=1e-6)} "
      f"max diff {(before - after).abs().max().item():.3e} inference tensor {after.is_inference()}")
print(f"generated {tuple(wave.shape)} rms {wave.pow(2).mean().sqrt().item():.6f} "
      f"mu-law codes mean {codes.float().mean().item():.4f} requires_grad {wave.requires_grad}")
