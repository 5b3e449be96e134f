from experiments.engine.cli import run_main
from experiments.paper1.scales import command_line

run_main(command_line, "experiments.paper1.reproduce")
