"""The reproduction engine: what every paper's reproduction shares (its command line, shards)."""
