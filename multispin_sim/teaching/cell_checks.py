"""Checks of tutorial 9 (many cells): each prints PASS or FAIL with a hint and returns a bool,
like those of ``teaching.checks``; the references are written here from the formulas."""
import math

import numpy as np

from .checks import _call, _report

__all__ = ["check_interference", "check_delivery_time", "check_reuse_gain"]


def _value(ex, func, args, hint):
    """(ok, float): the student's number, or a FAIL (None, an exception, not a number)."""
    ok, got = _call(ex, func, args, hint)
    if not ok:
        return False, None
    try:
        return True, float(got)
    except (TypeError, ValueError):
        return False, _report(ex, False, f"you give {got!r}: a number is needed", hint)


def _compare(ex, func, cases, hint, passed):
    """Call ``func`` on each case's arguments and compare with its expected value (rtol 1e-9):
    ``cases`` are (arguments, expected, what the case is); PASS with ``passed``."""
    for args, want, what in cases:
        ok, got = _value(ex, func, args, hint)
        if not ok:
            return False
        if not math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-300):
            return _report(ex, False, f"for {what} you give {got:.6g}, expected {want:.6g}",
                           hint)
    return _report(ex, True, passed)


def check_interference(func):
    """Exercise 9.1: ``func(power_w, gain, x_band, y_band)``, the interference of a correction
    on ``x_band`` at a receiver on ``y_band``: P g overlap / (x1 - x0)."""
    hint = ("the power is spread evenly over the interferer's own subband: P g times the "
            "overlap of the two subbands over the interferer's width (0 when they do not meet)")
    cases = [(0.01, 1e-10, (0.0, 1e6), (0.0, 1e6)), (0.01, 1e-10, (0.0, 2e6), (1.5e6, 3e6)),
             (0.2, 3e-12, (1e6, 2e6), (2.5e6, 4e6)), (0.05, 1e-9, (0.0, 4e6), (1e6, 2e6))]
    return _compare("9.1", func, [
        ((p, g, xb, yb), p * g * max(0.0, min(xb[1], yb[1]) - max(xb[0], yb[0])) / (xb[1] - xb[0]),
         f"P = {p} W, g = {g}, {xb} at {yb} (W)") for p, g, xb, yb in cases],
        hint, "the interference over the overlap, in all four cases")


def _delivery(bits, b, n0, signal_w, intervals):
    left = bits
    starts = [s for s, _ in intervals] + [math.inf]
    for (start, i_w), end in zip(intervals, starts[1:]):
        rate = b * math.log2(1 + signal_w / (n0 * b + i_w))
        if rate * (end - start) >= left:
            return start + left / rate
        left -= rate * (end - start)
    return math.inf


def check_delivery_time(func):
    """Exercise 9.2: ``func(bits, b, n0, signal_w, intervals)``, the delivery time over
    piecewise-constant interference; the reference adds the bits interval by interval."""
    hint = ("in each interval the rate is b log2(1 + S / (N0 b + I)): subtract rate x length from "
            "the bits left until an interval holds what is left, then add left / rate")
    n0, b, signal = 4e-21, 1e6, 1e-13
    rng = np.random.default_rng(9)
    cases = [(12000.0, [(0.0, 0.0)])]
    for _ in range(3):
        starts = np.concatenate([[0.0], np.sort(rng.uniform(0, 5e-3, 4))])
        cases.append((34816.0, list(zip(starts.tolist(), rng.exponential(1e-14, 5).tolist()))))
    return _compare("9.2", func, [
        ((bits, b, n0, signal, iv), _delivery(bits, b, n0, signal, iv), f"{len(iv)} intervals (s)")
        for bits, iv in cases], hint, "the delivery times of four corrections")


def check_reuse_gain(func):
    """Exercise 9.3: ``func(sinr1_db, sinr3_db)``, (b / 3) log2(1 + s3) / (b log2(1 + s1))."""
    hint = ("reuse 3: a third of the band at the better SINR; compare b/3 log2(1 + s3) with "
            "b log2(1 + s1)")
    return _compare("9.3", func, [
        ((s1, s3), math.log2(1 + 10 ** (s3 / 10)) / (3 * math.log2(1 + 10 ** (s1 / 10))),
         f"{s1} dB -> {s3} dB") for s1, s3 in ((-5.0, 10.0), (10.0, 20.0), (0.0, 0.0),
                                              (-10.0, 15.0))],
        hint, "the rate ratio of reuse 3 to reuse 1")
