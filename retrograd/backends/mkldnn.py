"""torch.backends.mkldnn: oneDNN CPU kernels; retrograd's are NumPy's, so it is not available. `enabled` decides, as
torch's flag does, whether a float32 nn.LSTM on the CPU runs as oneDNN's one node per layer (Note [LSTM layer] in
ops/nn.py) or step by step."""

enabled = True


def is_available() -> bool:
    return False
