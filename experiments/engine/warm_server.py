"""Imported first, and only, by the warm launcher's server (`experiments.engine.launch`), before it
imports torch: the server takes the environment every fit has (`launch.fit_environment`; OpenMP
and MKL read their thread counts when torch loads them, so a fit could not set them later) and
ignores SIGTERM, so that a signal sent to every process of a reproduction (a cluster's time limit)
leaves it to report its fits' exit statuses. Each fit takes SIGTERM's default handling back.
The server ends without unloading its modules (about 2 s of CPU), as its fits end: it writes no
file."""

import atexit
import os
import signal

from experiments.engine.launch import fit_environment

_environment = fit_environment(os.environ)
os.environ.clear()
os.environ.update(_environment)
signal.signal(signal.SIGTERM, signal.SIG_IGN)


_SERVER = os.getpid()


@atexit.register  # before torch's and the others': the last handler to run
def _end_without_teardown() -> None:
    if os.getpid() == _SERVER:  # a fit forked from the server inherits this handler
        os._exit(0)
