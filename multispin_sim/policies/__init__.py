"""Policies: small objects behind one interface each, chosen by name from the scenario.

- ``reactive``: who corrects uplink, who downlink, with what power (``policy.mode``).
- ``draft``: how many tokens each device drafts this round (``policy.draft``).

Adding a policy: one class, one ``@register`` line, one test against an oracle.
"""
from .reactive import REACTIVE_POLICIES, ReactivePolicy, make_reactive_policy
from . import fidelity  # noqa: F401  (registers the 'fidelity' reactive policy)
from . import straggler  # noqa: F401  (registers 'deadline' and 'robust', after 'fidelity')
from . import antennas  # noqa: F401  (registers 'local-search', after 'robust')
from .draft import DRAFT_CONTROLLERS, DraftContext, DraftController, make_draft_controller
from . import adaptive  # noqa: F401  (registers the adaptive draft controllers)

__all__ = [
    "REACTIVE_POLICIES", "ReactivePolicy", "make_reactive_policy",
    "DRAFT_CONTROLLERS", "DraftContext", "DraftController", "make_draft_controller",
]
