"""A stand-in for the first-scan child that never finishes: it waits until its stdin closes."""

import sys

if __name__ == "__main__":
    sys.stdin.buffer.read()  # the parent's end of the pipe: closed when it gives up or ends
    sys.exit(1)
