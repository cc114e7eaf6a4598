"""Size of one transmitted vocabulary distribution."""
import math

DENSE = "dense"


def payload_bits(effective_vocab=1024, vocab=151_665, prob_bits=16):
    """Bits of one distribution.

    Top-k ("effective vocabulary"): each of the ``effective_vocab`` kept entries carries its token
    index (ceil(log2 vocab) bits) and its probability (``prob_bits``):
    S = V_eff (ceil(log2 V) + Q). Dense (``effective_vocab == "dense"``): every probability in
    vocabulary order, no indices: S = V Q.
    """
    if effective_vocab == DENSE:
        return int(vocab) * int(prob_bits)
    index_bits = math.ceil(math.log2(int(vocab)))
    return int(effective_vocab) * (index_bits + int(prob_bits))
