import sys

if sys.argv[1:2] == ["wandb-summary"]:  # reads files only: without Lightning
    from experiments.wandb_summary import main

    main(sys.argv[2:])
else:
    from experiments.cli import main
    from experiments.engine.launch import end_as_interpreter

    end_as_interpreter(main, "experiments")
