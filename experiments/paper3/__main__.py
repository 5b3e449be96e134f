from experiments.engine.cli import run_main
from experiments.paper3.scales import command_line

run_main(command_line, "experiments.paper3.reproduce")
