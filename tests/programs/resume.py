"""Checkpoint and resume, as training scripts do it: train a few steps, torch.save the model, optimiser and
step in one dict, and later torch.load it and go on. `python resume.py save PATH` trains and saves;
`python resume.py resume PATH` loads and trains on. Under torch and under retrograd.run, so each library
resumes from the other's file."""

import sys

import torch
import torch.nn as nn
import torch.nn.functional as F


def batch(step):
    """A batch that is the same in both libraries (no random streams)."""
    x = torch.sin(torch.arange(64.0).reshape(16, 4) * (step + 1) * 0.37)
    return x, (x.sum(dim=1) > 0).long()


def main(mode, path):
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    start = 0
    if mode == "resume":
        checkpoint = torch.load(path)
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        scheduler.load_state_dict(checkpoint["scheduler"])
        start = checkpoint["step"]
    else:
        with torch.no_grad():
            for i, p in enumerate(model.parameters()):
                p.copy_(torch.linspace(-0.5, 0.5, p.numel()).reshape(p.shape) * (i + 1) / 3)
    for step in range(start, start + 4):
        x, y = batch(step)
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        print(f"step {step} loss {loss.item():.6f} lr {scheduler.get_last_lr()[0]:.6f}")
    if mode == "save":
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "scheduler": scheduler.state_dict(), "step": start + 4}, path)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
