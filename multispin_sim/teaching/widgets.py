"""Sliders for the tutorials, with a static fallback.

``explore(func, alpha=(0.5, 0.99, 0.01, 0.8), gamma=(0, 20, 1, 4))`` shows ipywidgets sliders
calling ``func(alpha=..., gamma=...)`` when ipywidgets is installed and the code runs in a
Jupyter kernel; otherwise (plain Python, ipywidgets missing, or the environment variable
``MULTISPIN_TUTORIALS_STATIC=1``) it calls ``func`` once with the default values, so the
notebook still runs headless and its figure is still drawn.

A kernel cannot tell whether a frontend will render the sliders: a notebook executed headless
(``jupyter nbconvert --execute``, nbclient) keeps them only as widget state, and a viewer without
the widget manager shows the plain-text part of the cell's output instead. That part is
``HEADLESS_NOTE`` (not the widget's repr), so such a reader learns why there is no figure and how
to get one.
"""
from __future__ import annotations

import os

__all__ = ["explore", "static_mode", "HEADLESS_NOTE"]

HEADLESS_NOTE = ("[sliders: move them in a live Jupyter session with ipywidgets; this view shows "
                 "no figure without one. For a static figure, run the notebook with "
                 "MULTISPIN_TUTORIALS_STATIC=1]")


def static_mode():
    """True when sliders cannot (or should not) be shown."""
    if os.environ.get("MULTISPIN_TUTORIALS_STATIC", "") not in ("", "0"):
        return True
    try:
        import ipywidgets  # noqa: F401  (installed?)
        from IPython import get_ipython
    except ImportError:
        return True
    shell = get_ipython()
    return shell is None or not hasattr(shell, "kernel")


def explore(func, **sliders):
    """Sliders for ``func``'s keyword arguments: name=(min, max, step, value) or name=[choices]."""
    defaults = {name: (spec[0] if isinstance(spec, list) else spec[3])
                for name, spec in sliders.items()}
    if static_mode():
        func(**defaults)
        return None
    import ipywidgets as w
    from IPython.display import display

    ui = w.interactive(func, **controls(sliders))   # runs func once, into the widget's output
    bundle = ui._repr_mimebundle_()
    bundle["text/plain"] = HEADLESS_NOTE              # what a viewer without widgets shows
    display(bundle, raw=True)
    # nothing returned: a returned value would be echoed under the sliders (``interact``
    # returns the function, shown as "<function show_pmf ...>")
    return None


def controls(sliders):
    """The ipywidgets controls of ``explore``'s slider specifications."""
    import ipywidgets as w

    made = {}
    for name, spec in sliders.items():
        if isinstance(spec, list):
            made[name] = w.Dropdown(options=spec, value=spec[0], description=name)
            continue
        lo, hi, step, value = spec
        kind = w.IntSlider if all(isinstance(x, int) for x in spec) else w.FloatSlider
        made[name] = kind(min=lo, max=hi, step=step, value=value, description=name,
                          continuous_update=False)
    return made
