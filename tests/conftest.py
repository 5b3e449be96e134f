import os

import torch

# Tests never start a W&B run; the CSV log carries the same metrics.
os.environ["WANDB_MODE"] = "disabled"

# `make test` runs the test files on one pytest-xdist worker per core: each worker, and every
# process it starts, gets its share of the cores rather than all of them (two workers of two torch
# threads each on two cores spend their time waiting on each other).
_workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if _workers > 1:
    from probes.command.run import core_share

    _threads = core_share(_workers)
    os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = str(_threads)
    torch.set_num_threads(_threads)
