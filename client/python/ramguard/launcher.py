"""A process started inside a run by a launcher: `ramguard exec` (current_run()) or the Slurm
plugin (RAMGUARD_RUN_ATTACH: start_run attaches to the launcher's run)."""

import os
from typing import TYPE_CHECKING, Optional

from .run import Run
from .wire import ATTACH_ENV, RUN_ENV

if TYPE_CHECKING:  # client.py imports this module
    from .client import Client


def _launcher_run(pid: Optional[int]) -> Optional[str]:
    """The run a launcher started for this process (RAMGUARD_RUN with RAMGUARD_RUN_ATTACH set),
    when start_run is asked for this process; else None."""
    if pid not in (None, 0, os.getpid()) or not os.environ.get(ATTACH_ENV):
        return None
    return os.environ.get(RUN_ENV) or None


def current_run(client: Optional["Client"] = None) -> Optional[Run]:
    """The run this process was started in (RAMGUARD_RUN, set by `ramguard exec`), on the
    daemon at RAMGUARD_SOCKET; None when not running under ramguard. The returned Run does not
    end the run on exit: its starter does."""
    run_id = os.environ.get(RUN_ENV)
    if not run_id:
        return None
    return Run.attach(run_id, client)  # attach() makes a Client() when none is given
