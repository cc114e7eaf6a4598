"""Input files read once while many scenarios are checked: ``reading_once()`` opens a scope in
which ``read_once(reader, *args)`` keeps each reader's result by its arguments (a path and what
the reading depends on), so checking the cells of a sweep reads each distinct file once; outside
a scope every call reads. The cached results are shared: callers must not modify them."""
import contextlib
import contextvars

_CACHE = contextvars.ContextVar("multispin_input_cache", default=None)


@contextlib.contextmanager
def reading_once():
    """A scope in which ``read_once`` keeps what it read (dropped when the scope ends)."""
    token = _CACHE.set({})
    try:
        yield
    finally:
        _CACHE.reset(token)


def read_once(reader, *args, **kwargs):
    """``reader(*args, **kwargs)``, kept in the current ``reading_once`` scope by the reader and
    its (hashable) arguments; errors are not kept (the check that meets one stops)."""
    cache = _CACHE.get()
    if cache is None:
        return reader(*args, **kwargs)
    key = (reader, args, tuple(sorted(kwargs.items())))
    if key not in cache:
        cache[key] = reader(*args, **kwargs)
    return cache[key]
