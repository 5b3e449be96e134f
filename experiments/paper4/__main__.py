from experiments.engine.cli import run_main
from experiments.paper4.scales import command_line

run_main(command_line, "experiments.paper4.reproduce")
