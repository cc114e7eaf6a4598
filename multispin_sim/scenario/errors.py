"""The one exception type of the scenario package."""

from __future__ import annotations

from typing import Optional

__all__ = ["ScenarioError"]


class ScenarioError(ValueError):
    """A scenario (file, mapping, override or ``--set`` option) is invalid.

    ``path`` is the dotted key path of the offending entry (``"devices.overrides.3.distance_m"``),
    the file name for file-level problems, the option text for a malformed ``--set`` option, or
    ``""`` for the top-level document.  ``str(error)`` is one line:
    ``<path>: <what is wrong>; <what is allowed>``.  ``source`` is the scenario file the error was
    found in (``None`` for in-memory scenarios) so a CLI can prefix it.
    """

    def __init__(self, path: str, problem: str, allowed: Optional[str] = None,
                 source: Optional[str] = None) -> None:
        self.path = path
        self.problem = problem
        self.allowed = allowed
        self.source = source
        message = f"{path or '<scenario>'}: {problem}"
        if allowed:
            message += f"; {allowed}"
        super().__init__(" ".join(message.split()))  # always a single line

    def __reduce__(self):  # keep path/problem/allowed across pickling (multiprocessing)
        return (type(self), (self.path, self.problem, self.allowed, self.source))
