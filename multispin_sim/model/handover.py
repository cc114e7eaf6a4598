"""The A3 handover trigger (pure numpy): a neighbour better than the serving server by a
hysteresis for a time-to-trigger (3GPP TS 38.331 event A3, offsets folded into the hysteresis).

``A3Trigger.step(t, rsrp_db)`` is called at measurement instants with the long-term received
power of every device from every server (K, S), in dB; it returns the devices that hand over at
``t`` and their new servers. A device hands over when its best neighbour has been more than
``hysteresis_db`` above its serving server continuously for ``ttt_s`` seconds (the
same neighbour need not stay best: the target is the best one at the trigger). With
hysteresis 0 and time-to-trigger 0 the serving server is always the strongest one.
A handover back to the server a device left within ``ping_pong_s`` counts as a ping-pong.
"""
import numpy as np

# relative to max(1 s, t): a sum of n periods is off by at most ~n x 1e-16 t, and the slack
# stays below one period while a run has fewer than 1e9 measurements
TIME_TOLERANCE = 1e-9


class A3Trigger:
    def __init__(self, serving, hysteresis_db=0.0, ttt_s=0.0, ping_pong_s=1.0):
        self.serving = np.array(serving, dtype=np.int64)
        self.hysteresis_db = float(hysteresis_db)
        self.ttt_s = float(ttt_s)
        self.ping_pong_s = float(ping_pong_s)
        k = self.serving.size
        self.entered = np.full(k, np.nan)      # when the A3 condition became true (NaN: not)
        self.previous = np.full(k, -1)         # the server left at the last handover
        self.left_at = np.full(k, -np.inf)
        self.handovers = 0
        self.ping_pongs = 0

    def step(self, t, rsrp_db):
        """(devices (n,), new servers (n,), ping-pong flags (n,)) handing over at ``t``."""
        rsrp_db = np.asarray(rsrp_db, dtype=float)
        idx = np.arange(self.serving.size)
        own = rsrp_db[idx, self.serving]
        masked = rsrp_db.copy()
        masked[idx, self.serving] = -np.inf
        best = np.argmax(masked, axis=1)
        condition = masked[idx, best] > own + self.hysteresis_db
        self.entered[~condition] = np.nan
        start = condition & np.isnan(self.entered)
        self.entered[start] = t
        slack = TIME_TOLERANCE * max(1.0, abs(float(t)))
        fire = condition & (t - self.entered >= self.ttt_s - slack)
        devices = np.flatnonzero(fire)
        return devices, best[devices], self.hand_over(t, devices, best[devices])

    def hand_over(self, t, devices, targets):
        """Move ``devices`` to ``targets`` at ``t`` (the trigger's or another rule's decision);
        returns the ping-pong flags."""
        devices = np.asarray(devices, dtype=np.int64)
        targets = np.asarray(targets, dtype=np.int64)
        pong = ((targets == self.previous[devices])
                & (t - self.left_at[devices] <= self.ping_pong_s))
        self.previous[devices] = self.serving[devices]
        self.left_at[devices] = t
        self.serving[devices] = targets
        self.entered[devices] = np.nan
        self.handovers += devices.size
        self.ping_pongs += int(np.count_nonzero(pong))
        return pong
