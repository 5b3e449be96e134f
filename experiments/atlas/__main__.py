from experiments.atlas.scales import command_line
from experiments.engine.cli import run_main

run_main(command_line, "experiments.atlas.reproduce")
