"""A first scan's detectors run on the machine's other cores, beside its reading (issue 33).

The first-scan child (`in_subprocess`) reads the brain a chunk at a time; the detectors were
more than half of its CPU (3 s of 5.3 s at 100,000 demo rows, ~20 s of ~23 s at 100,000 rows
of CLEO's real layout, whose narratives are long). Within `helping()`, `chunk_analyser` gives
the scan's loop an analyser that sends each chunk's texts to a worker process (one per core
beyond the first) and goes on reading while it runs the detectors; when every worker already
has `DEPTH` chunks, the chunk is analysed here instead when that evens the load (`_help_here`),
else the scan waits for room: the workers' queues (their memory) stay bounded. Findings are handed back in the
order the chunks were given, so the findings table is built as a scan in one process builds it.

Measured on the 2-core machine (shared, so CPU seconds are the firm figures; wall is the larger
of the two processes' CPU when the cores are free):
  demo 100,000 rows:  one process 4.3 s CPU; with a worker, the scan 2.6 s and the worker 1.8 s.
  demo 1,000,000:     one process 38 s CPU; with a worker, the scan 24.4 s and the worker 13.7 s
                      (the scan's own reading is then the longer part: SQLite's fetch, hashing,
                      columns, citations; the detectors, whose repeats a memo catches, 13.7 s).
  real layout 100k:   one process 12.1 s CPU; with a worker, 6.2 s and 6.0 s: wall halved.
                      Peak RSS of the child 302 MB → 266 MB, the worker's 120–130 MB (its memos
                      and a batch's copies, see `detectors._batches`); at 1M demo rows the child
                      800 MB → 660–710 MB, the worker 205 MB.
What it buys is wall time, not CPU: the same work on two cores instead of one, plus a little
for sending the texts through a pipe (pickled) and the findings back, and the detectors' memo
split in two. Not more: the reading stays in one process.

A worker ends as soon as its task pipe closes: when the scanning process ends for any reason
(done, killed, or ended by its own parent's going, `in_subprocess.exit_with_parent`), the
kernel closes the pipe, and the worker's reading thread ends the process at once even in the
middle of a chunk. So a worker never outlives the scan.
"""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from multiprocessing.connection import Connection

from cleo_tui.memory.detectors import Findings
from cleo_tui.memory.pool_scan import in_subprocess

DEPTH = 3  # chunks a worker holds at most (one it analyses, two waiting): bounded memory
# A worker yields to the app's UI when both want a core: keys stay quick while both cores scan; a worker
# behind only means more chunks analysed by the scan. (Started by the scan's process, it inherits that
# process's SCHED_IDLE, `background.yield_the_cores`, which this niceness does not change.)
WORKER_NICENESS = 5
MOST_WORKERS = 3  # each holds its chunks and a corpus's copies (~100 MB at the peak with long texts)
_MODULE = "cleo_tui.memory.pool_scan.detector_workers"

Analyse = Callable[[list[str]], list[Findings]]
Done = Callable[[list[Findings]], None]


class Worker:
    """One worker process running the detectors on the chunks of texts sent to it, in order."""

    def __init__(self) -> None:
        task_read, self._task_write = os.pipe()
        self._result_read, result_write = os.pipe()
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", _MODULE, str(task_read), str(result_write)],
                pass_fds=(task_read, result_write), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, env=in_subprocess.child_environment())
        except BaseException:
            for fd in (self._task_write, self._result_read):
                os.close(fd)
            raise
        finally:
            os.close(task_read)
            os.close(result_write)
        self.tasks = Connection(self._task_write, readable=False)
        self.results = Connection(self._result_read, writable=False)
        self.in_flight = 0
        self.last_seconds = 0.0  # the worker's CPU for the chunk last received
        self._outbox: queue.SimpleQueue[list[str] | None] = queue.SimpleQueue()
        self._sender = threading.Thread(target=self._send_all, name="detector tasks", daemon=True)
        self._sender.start()

    def _send_all(self) -> None:
        """Write the chunks to the worker, in a thread: a write waits while the worker is busy with
        another chunk (its reading thread needs the interpreter the detectors hold), and the scan
        has the next chunk to read meanwhile (0.3 s of 3 s at 100,000 rows spent waiting there)."""
        try:
            while (texts := self._outbox.get()) is not None:
                self.tasks.send(texts)
        except OSError:
            pass  # the worker ended: `receive` says so (EOFError)
        finally:
            self.tasks.close()

    def send(self, texts: list[str]) -> None:
        self._outbox.put(texts)
        self.in_flight += 1

    def receive(self) -> list[Findings]:
        """The findings of the oldest chunk sent (waits for them); EOFError when the worker died."""
        findings, self.last_seconds = self.results.recv()
        self.in_flight -= 1
        return findings  # type: ignore[no-any-return]

    def close(self) -> None:
        """Close the pipes: the worker ends at once (see the module docstring), and is reaped."""
        self._outbox.put(None)
        self.results.close()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._sender.join()


class ChunkAnalyser:
    """Chunks of texts analysed by the workers or here, their findings handed to each chunk's
    `done` in the order the chunks were submitted."""

    def __init__(self, analyse: Analyse, workers: Sequence[Worker] = ()) -> None:
        self._analyse = analyse
        self._workers = list(workers)
        # (worker or None, the texts while a worker has them, findings once known, done)
        self._pending: deque[tuple[Worker | None, list[str] | None, list[Findings] | None, Done]] = deque()
        self.sent = 0  # chunks sent to a worker
        self.here = 0  # chunks analysed here
        self._reading = 0.0  # this process's CPU between two submissions (the scan's own work)
        self._detecting = 0.0  # CPU of the chunks analysed so far (here or in a worker)
        self._detected = 0
        self._left_at: float | None = None

    def submit(self, texts: list[str], done: Done) -> None:
        """Analyse `texts` (in a worker when one has room, else here or, once a worker has room, there);
        `done(findings)` is called once every chunk submitted before has had its own."""
        if self._left_at is not None:
            self._reading += time.process_time() - self._left_at
        if self._workers and not self._room() and not self._help_here():
            self._hand_back(block=True, until_room=True)
        free = [w for w in self._workers if w.in_flight < DEPTH]
        if free:
            worker = min(free, key=lambda w: w.in_flight)
            worker.send(texts)
            self.sent += 1
            self._pending.append((worker, texts, None, done))
        else:
            self._pending.append((None, None, self._analysed_here(texts), done))
        self._hand_back(block=False)
        self._left_at = time.process_time()

    def _room(self) -> bool:
        return any(w.in_flight < DEPTH for w in self._workers)

    def _help_here(self) -> bool:
        """Whether this process should analyse the chunk itself rather than wait for a worker: while the
        share of chunks analysed here is below the one that evens the load. With reading r and detecting
        d (CPU per chunk) and W workers, the scan's time r + f·d equals a worker's (1 - f)·d / W when
        f = (d - W·r) / ((W + 1)·d): none when the reading is the slower part (the demo's short texts
        nearly), 40 % with CLEO's long narratives. Before any chunk came back: help."""
        submitted = self.sent + self.here
        if not self._detected or not submitted:
            return True
        reading, detecting = self._reading / submitted, self._detecting / self._detected
        share = (detecting - len(self._workers) * reading) / ((len(self._workers) + 1) * detecting)
        return self.here < share * (submitted + 1)

    def _analysed_here(self, texts: list[str]) -> list[Findings]:
        started = time.process_time()
        findings = self._analyse(texts)
        self._detecting += time.process_time() - started
        self._detected += 1
        self.here += 1
        return findings

    def finish(self) -> None:
        """Wait for every chunk's findings and hand them back."""
        self._hand_back(block=True)

    def _hand_back(self, block: bool, until_room: bool = False) -> None:
        """Hand back the findings known, in order; with `block`, wait for them (with `until_room`,
        only until a worker has room for another chunk)."""
        while self._pending and not (until_room and self._room()):
            worker, texts, findings, done = self._pending[0]
            if worker is not None and texts is not None:
                if worker in self._workers:
                    if not block and not worker.results.poll():
                        return
                    try:
                        findings = worker.receive()
                        self._detecting += worker.last_seconds
                        self._detected += 1
                    except (EOFError, OSError):  # (it ended early, e.g. killed: analysed here)
                        self._workers.remove(worker)
                if worker not in self._workers:
                    findings = self._analyse(texts)
            self._pending.popleft()
            done(findings if findings is not None else [])

    def close(self) -> None:
        """End the workers (at once, even mid-chunk)."""
        for worker in self._workers:
            worker.close()
        self._workers = []


_helping: list[int] = []  # how many workers `chunk_analyser` starts (the innermost `helping`)


@contextmanager
def helping(workers: int | None = None) -> Iterator[None]:
    """Within this block, `chunk_analyser` runs the detectors in `workers` worker processes
    (default: one per core this process may use beyond the first, at most `MOST_WORKERS`)."""
    count = min(MOST_WORKERS, max(0, _cores() - 1)) if workers is None else workers
    _helping.append(count)
    try:
        yield
    finally:
        _helping.pop()


def _cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def chunk_analyser(analyse: Analyse) -> ChunkAnalyser:
    """An analyser for one scan, its workers started now (`close` it after); without `helping`,
    or when no worker can start, every chunk is analysed here, as soon as it is submitted."""
    workers: list[Worker] = []
    for _ in range(_helping[-1] if _helping else 0):
        try:
            workers.append(Worker())
        except OSError:
            break
    return ChunkAnalyser(analyse, workers)


def serve(task_fd: int, result_fd: int) -> None:
    """A worker's life: analyse each chunk received, send its findings back; end (at once, even
    mid-chunk) when the task pipe closes."""
    from cleo_tui import collector
    from cleo_tui.memory import detectors

    tasks = Connection(task_fd, writable=False)
    results = Connection(result_fd, readable=False)
    inbox: queue.SimpleQueue[list[str]] = queue.SimpleQueue()

    def read() -> None:
        try:
            while True:
                inbox.put(tasks.recv())
        except BaseException:
            pass
        finally:
            os._exit(0)  # the scanning process ended (or gave up): so does this one, now

    threading.Thread(target=read, name="tasks", daemon=True).start()
    try:
        os.nice(WORKER_NICENESS)
    except OSError:
        pass
    with collector.paused(), detectors.findings_not_stored():
        while True:
            texts = inbox.get()
            started = time.process_time()
            findings = detectors.analyse_texts(texts)
            results.send((findings, time.process_time() - started))


if __name__ == "__main__":
    serve(int(sys.argv[1]), int(sys.argv[2]))
