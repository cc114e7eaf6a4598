"""Reactive policies for the multi-antenna schemes (docs/components/antennas.md).

Under the orthogonal schemes (``ofdma-mrt`` / ``ofdma-mrc``) the reactive problem is the
paper's on the array gains, and the prefix lemma makes 'optimal' optimal. Under a scheme that
shares a band the delays of one link depend on who else is on it (zero-forcing gains depend on
the DL group, MMSE SINRs on the UL set), the prefix structure is no longer proved, and:

- 'optimal' applies the paper's prefix split as is (UL prefix in the order of P_k ||a_k||^2,
  every prefix evaluated under the scheme);
- 'exhaustive' is the reference (all 2^|R| assignments under the scheme);
- 'local-search' starts from the best prefix and makes the best single-device mode change while
  T_comm drops (O(|R|^2) evaluations per pass): for large K.
"""
from ..model import reactive as solver
from .reactive import REACTIVE_POLICIES, ReactivePolicy


@REACTIVE_POLICIES.register("local-search")
class LocalSearchSplit(ReactivePolicy):
    """The best prefix split, then single-device mode changes while T_comm drops (equal to
    'optimal' on a problem of the paper's form, where the prefix split is optimal)."""

    tcomm_kernel = "optimal"

    def decide(self, problem, rng=None):
        if problem.multi_user:
            return problem.local_search()
        return solver.optimal_split(problem)
