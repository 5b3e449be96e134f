"""Metric names shared by the suite's models: one name per (stage, split)."""


def metric_prefix(stage: str, split: str) -> str:
    """`train/...`; `val/...` for the split `val`, else `val/<split>/...`; `test/<split>/...`."""
    if stage == "train" or (stage, split) == ("val", "val"):
        return stage
    return f"{stage}/{split}"


def metric_key(stage: str, split: str) -> str:
    """Key of a split's metric object in a `ModuleDict` (which forbids dots)."""
    return f"{stage}_{split}"
