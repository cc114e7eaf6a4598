"""The folder an environment given ``out`` writes its episodes to: one no other live
environment writes to.

An environment writes ``out/episode-NNNN``. The copies of a vector environment are made by one
factory and so are all given the same ``out``: while one environment holds ``out`` (from its
first ``reset`` to its ``close``), the next is given ``out/copy-1``, then ``out/copy-2``, ...
(the first folder no live environment holds), so no copy replaces another's records. A folder
is held by an exclusive ``flock`` on its ``.multispin-env.lock``: the lock belongs to the open
file, so it holds between processes (``AsyncVectorEnv``) and within one (``SyncVectorEnv``), and
the system lets it go when the process ends, however it ends. Where there is no ``flock`` (not
POSIX, or a file system that refuses it), the folders held in this process count."""
import itertools
import os
import shutil
import tempfile
from pathlib import Path

LOCK = ".multispin-env.lock"
_HELD = set()   # without flock: the folders this process's environments hold


class Hold:
    """A folder held for one environment until ``release()`` (which is safe to repeat)."""

    def __init__(self, folder, fd=None, key=None):
        self.folder, self._fd, self._key = folder, fd, key

    def release(self):
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._key is not None:
            _HELD.discard(self._key)
            self._key = None


class EpisodeFolders:
    """Where an environment's episodes go: ``out/episode-NNNN``, ``out`` held (``hold``) from
    the first episode until ``close``; without ``out``, a temporary folder holding the latest
    episode only. ``folder``: the folder held (``out`` or ``out/copy-N``), None before."""

    def __init__(self, out):
        self.out, self.folder = out, None
        self._hold = self._tmp = None

    def episode(self, n):
        """An empty folder for episode ``n``."""
        if self.out is not None:
            if self._hold is None:
                self._hold = hold(self.out)
                self.folder = self._hold.folder
            folder = self.folder / f"episode-{n:04d}"
            if folder.exists():
                shutil.rmtree(folder)
            folder.mkdir(parents=True)
            return folder
        if self._tmp is not None:
            self._tmp.cleanup()
        self._tmp = tempfile.TemporaryDirectory(prefix="multispin-gym-")
        return Path(self._tmp.name)

    def close(self):
        """Let the folder go (its records stay; another environment may take it now) and
        remove the temporary one."""
        if self._hold is not None:
            self._hold.release()
            self._hold = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None


def hold(out):
    """The ``Hold`` of ``out`` if no live environment holds it, else of the first of
    ``out/copy-1``, ``out/copy-2``, ... that none holds (made if missing)."""
    out = Path(out)
    for i in itertools.count():
        held = _try(out if i == 0 else out / f"copy-{i}")
        if held is not None:
            return held


def _try(folder):
    folder.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:
        return _try_here(folder)
    fd = os.open(folder / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:   # another environment holds it
        os.close(fd)
        return None
    except OSError:           # no flock on this file system
        os.close(fd)
        return _try_here(folder)
    return Hold(folder, fd=fd)


def _try_here(folder):
    key = str(folder.resolve())
    if key in _HELD:
        return None
    _HELD.add(key)
    return Hold(folder, key=key)
