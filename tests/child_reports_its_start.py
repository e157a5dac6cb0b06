"""Run by tests/test_scan_priority.py through `cleo_tui.low_priority`: prints this process's
niceness, whether numpy was imported before this module ran, and its arguments."""

import os
import sys

if __name__ == "__main__":
    print(os.nice(0), "numpy" in sys.modules, sys.argv[1:])
