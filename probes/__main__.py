import sys

from probes.command.cli import main

sys.exit(main())
