import os

# Tests never start a W&B run; the CSV log carries the same metrics.
os.environ["WANDB_MODE"] = "disabled"
