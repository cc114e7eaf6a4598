"""A device as a SimPy process: each round it drafts, then (if rejected) sends its correction."""


class Device:
    """Device ``index`` of a ``RoundLoop``; ``run(env)`` is its life as a SimPy process.

    Per round: wait for the round to start; if active, draft ``gamma_k`` tokens for
    ``gamma_k t_k`` seconds and hand the draft to the server; wait for the verification result;
    if rejected, transmit the correction over the channel in the mode, power and bandwidth the
    server chose (``channel.transmit`` returns the realised delay). On a plain channel
    (``OFDMAChannel.plain_transmit``) a transmission is one timeout of the planned delay: the
    device waits it itself and the loop takes the planned delays as the realised ones. The
    device tells the loop when its draft is in (``loop.draft_arrived``) and when it is done
    with the round (``loop.device_finished``).
    """

    def __init__(self, index, draft_latency_s, loop, channel):
        self.index = index
        self.draft_latency_s = float(draft_latency_s)
        self.loop = loop
        self.channel = channel

    def run(self, env):
        loop, k, channel = self.loop, self.index, self.channel
        timeout = env.timeout
        draft_arrived, device_finished = loop.draft_arrived, loop.device_finished
        while True:
            yield loop.round_started
            if not loop.active_list[k]:
                if loop.carry_list is not None and loop.carry_list[k]:
                    # a correction deferred last round (policy 'deadline'): sent now, no draft
                    # (the loop leaves such a device out of the round's active set)
                    loop.carry_delay[k] = yield from channel.transmit(
                        env, k, loop.carry_mode[k], float(loop.carry_power[k]),
                        loop.carry_bandwidth, float(loop.carry_planned[k]), loop.round_index)
                    loop.carry_finished(k)
                continue
            yield timeout(loop.draft_list[k])  # gamma_k t_k
            draft_arrived(k)
            yield loop.verified
            if loop.mode_list[k]:
                if loop.plain:
                    # channel.transmit would wait exactly the planned delay: the loop takes the
                    # planned delays as the realised ones
                    yield timeout(loop.delay_list[k])
                else:
                    loop.realised_delay[k] = yield from channel.transmit(
                        env, k, loop.mode_list[k], float(loop.power[k]), loop.bandwidth,
                        float(loop.delay[k]), loop.round_index)
            device_finished(k)
