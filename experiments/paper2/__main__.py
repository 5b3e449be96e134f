from experiments.engine.cli import run_main
from experiments.paper2.scales import command_line

run_main(command_line, "experiments.paper2.reproduce")
