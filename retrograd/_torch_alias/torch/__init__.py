"""`import torch` in a process that multiprocessing started for a program run by `retrograd.run`.

"spawn" and "forkserver" start a fresh interpreter that re-imports the program's main module, with
the parent's sys.path but not its import hook; retrograd.run puts this folder on that path ahead of
site-packages, so the child's first `import torch` lands here, turns the hook on and is retrograd.
The parent never reaches this file: its hook answers `torch` first.
"""

import sys

import retrograd
from retrograd.run import install

install()
sys.modules[__name__] = retrograd  # the module `import torch` gives back is the one sys.modules holds after this runs
