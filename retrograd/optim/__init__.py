"""torch.optim: optimisers that update parameters in place from their `.grad`, and lr schedules."""

from . import lr_scheduler
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .lbfgs import LBFGS
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["SGD", "Adagrad", "Adam", "AdamW", "LBFGS", "Optimizer", "RMSprop", "lr_scheduler"]
