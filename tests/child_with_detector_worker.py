"""A stand-in for the first-scan child that starts a detector worker, keeps it busy and never
finishes: it tells the worker's pid through the FIFO named by $CLEO_TUI_TEST_FIFO, and ends when
its stdin closes (as `in_subprocess` does)."""

import os
import threading

from cleo_tui.memory.pool_scan import detector_workers, in_subprocess

if __name__ == "__main__":
    in_subprocess.exit_with_parent()
    worker = detector_workers.Worker()
    worker.send([f"note {i}: see src/a{i}.py, T{i} and parse_{i}() " * 40 for i in range(20_000)])
    with open(os.environ["CLEO_TUI_TEST_FIFO"], "w") as fifo:
        fifo.write(str(worker.process.pid))
    threading.Event().wait()
