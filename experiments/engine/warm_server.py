"""Imported first, and only, by the warm launcher's server (`experiments.engine.launch`), before it
imports torch: the server takes the environment every fit has (`launch.fit_environment`; OpenMP
and MKL read their thread counts when torch loads them, so a fit could not set them later) and
ignores SIGTERM, so that a signal sent to every process of a reproduction (a cluster's time limit)
leaves it to report its fits' exit statuses. Each fit takes SIGTERM's default handling back."""

import os
import signal

from experiments.engine.launch import fit_environment

_environment = fit_environment(os.environ)
os.environ.clear()
os.environ.update(_environment)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
