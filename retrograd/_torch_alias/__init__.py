"""A folder retrograd.run puts on sys.path for the processes multiprocessing starts: its `torch` package
answers their `import torch` with retrograd (see torch/__init__.py). A package only so that it is installed."""
