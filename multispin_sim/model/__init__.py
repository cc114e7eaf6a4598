"""The model core: pure, vectorised numpy functions (no SimPy, no files).

Modules are named for the part of the model they compute:

- ``units``: dB / dBm conversions.
- ``pathloss``: large-scale gain G(d).
- ``fading``: small-scale fading draws (Rayleigh block fading).
- ``rates``: noise power and Shannon rate of an OFDMA link.
- ``payload``: size in bits of one transmitted distribution.
- ``speculative``: draft outcomes (accepted drafts, tokens, rejection) and E[N].
- ``latency``: drafting and batched-verification latency.
- ``reactive``: the reactive problem of MODEL.md section 6 (UL delay, DL delay-equalising
  power, prefix-optimal mode selection, exhaustive search), vectorised over outcomes.
"""
