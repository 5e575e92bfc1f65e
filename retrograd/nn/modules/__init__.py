"""The layers of torch.nn, one file per family as in torch; each family lists its public classes in __all__."""

from . import (
    activation,
    adaptive,
    batchnorm,
    channelshuffle,
    container,
    conv,
    distance,
    dropout,
    flatten,
    fold,
    instancenorm,
    linear,
    loss,
    module,
    normalization,
    padding,
    pixelshuffle,
    pooling,
    rnn,
    sparse,
    transformer,
    upsampling,
)

_FAMILIES = (module, container, linear, activation, conv, pooling, padding, dropout, flatten, fold, batchnorm,
             instancenorm, normalization, sparse, rnn, transformer, loss, distance, channelshuffle, upsampling,
             pixelshuffle, adaptive)
for _family in _FAMILIES:
    for _name in _family.__all__:
        globals()[_name] = getattr(_family, _name)

__all__ = sorted(name for family in _FAMILIES for name in family.__all__)
