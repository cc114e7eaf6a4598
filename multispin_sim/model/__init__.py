"""The model core: pure, vectorised numpy functions (no SimPy, no files).

Modules are named for the part of the model they compute:

- ``units``: dB / dBm conversions.
- ``pathloss``: large-scale gain G(d).
- ``shadowing``: log-normal shadowing and its correlation over the distance moved.
- ``fading``: small-scale fading draws (Rayleigh block fading, Gauss-Markov with Jakes
  correlation J0(2 pi f_D dt)), and delivery over consecutive fading blocks.
- ``rates``: noise power and Shannon rate of an OFDMA link.
- ``topology``: positions and distances in the plane.
- ``cells``: layouts of several servers (hexagonal grid with wrap-around, PPP, given positions).
- ``pathloss_3gpp``: large-scale models per link: the paper's power law, 3GPP TR 38.901 UMa /
  UMi.
- ``association``: which server a device attaches to (max-RSRP, nearest, load-aware, joint).
- ``sinr``: SINR, frequency reuse, delivery at a piecewise-constant rate.
- ``handover``: the A3 trigger (hysteresis, time-to-trigger, ping-pongs).
- ``mobility``: random-waypoint movement (path loss clamped at the 1 m reference distance).
- ``queueing``: request lengths and the M/G/1 oracle (rounds per request, Pollaczek-Khinchine).
- ``payload``: size in bits of one transmitted distribution.
- ``speculative``: draft outcomes (accepted drafts, tokens, rejection) and E[N].
- ``latency``: drafting latency (batched verification: ``verification``).
- ``reactive``: the reactive problem of docs/model.md section 6 (UL delay, DL delay-equalising
  power, prefix-optimal mode selection, exhaustive search), vectorised over outcomes.
"""
