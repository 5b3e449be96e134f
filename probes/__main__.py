import sys

from probes.command import main

sys.exit(main())
