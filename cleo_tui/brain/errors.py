"""Errors a user can cause. Each message is one paragraph that says what to do."""


class BrainError(Exception):
    """A problem with the brain the user pointed at; shown without a traceback."""


class BrainNotFound(BrainError):
    pass


class NotSQLite(BrainError):
    pass


class NotABrain(BrainError):
    pass


class BrainUnreadable(BrainError):
    pass


class ReadOnlyBrain(BrainError):
    """A write was attempted on a brain opened read-only."""


class BrainBusy(BrainError):
    """Another process held the write lock longer than the busy timeout."""


class BrainUnwritable(BrainError):
    """SQLite refused a write: full disk, read-only file, or the file went away."""


class StaleState(BrainError):
    """The brain changed since a preview or proposal was computed."""


class UnsupportedLayout(NotABrain):
    """A brain whose tables have a shape cleo-tui cannot read or write safely."""
