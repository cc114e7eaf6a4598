"""The ``cells`` section: several edge servers, their layout, path loss, association and
frequency reuse (docs/components/cells.md). The default, one cell, is the paper's system."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, Optional

from .choices import Registered
from .cross_checks import cross_check
from .errors import ScenarioError
from .names import (MAX_DISTANCE_M, MAX_REQUEST_TOKENS, MAX_STEP_MS, MIN_DISTANCE_M, POWER_DBM,
                    STEP_MS)
from .params import Check, FrozenMap, Params, between, ge, in_interval, param, section

CELL_LAYOUTS = Registered("multispin_sim.model.cells", "CELL_LAYOUTS")
PATHLOSS_MODELS = Registered("multispin_sim.model.pathloss_3gpp", "PATHLOSS_MODELS")
ASSOCIATION_RULES = Registered("multispin_sim.model.association", "ASSOCIATION_RULES")
CELL_DROPS: tuple[str, ...] = ("per-cell", "region")
HANDOVER_TRIGGERS: tuple[str, ...] = ("a3", "association")
INTERFERENCE_CSI: tuple[str, ...] = ("last", "mean", "none")
_REUSE = Check(lambda v: v in (1, 3), "1 or 3", standalone=True)
MAX_CELLS = 10_000              # sites of a hexagonal grid (57 rings: 9,919)
MAX_DENSITY_PER_KM2 = 1e6       # one server per square metre
MAX_ISD_M = 10_000_000          # 10,000 km: far enough for cells that do not interfere
_SPAN_M = in_interval(MIN_DISTANCE_M, MAX_DISTANCE_M)   # 1 m to 100 km


@section
class ServerOverride(Params):
    """Settings of one cell's server that replace the ``server`` ones (unset = not overridden)."""

    _omit_none: ClassVar[bool] = True

    verify_fixed_ms: Optional[float] = param(None, "T_ver0 of this server (at most a minute, as "
                                             "server.verify_fixed_ms)", unit="ms", check=STEP_MS)
    verify_per_device_ms: Optional[float] = param(None, "T_ver1 of this server (at most a "
                                                  "minute)", unit="ms", check=STEP_MS)
    dl_power_dbm: Optional[float] = param(None, "DL power budget of this server (-100 to 100 "
                                          "dBm, as server.dl_power_dbm)", unit="dBm",
                                          check=POWER_DBM)


@section
class Cells(Params):
    """Edge servers, each with its own queue, batching, cost model, band and DL budget."""

    layout: str = param("single", "'single': one server (the paper's system); 'hex': "
                        "cells.count sites on a hexagonal grid; 'ppp': a Poisson point process "
                        "of servers; 'graphml': the server nodes of topology.graphml_file",
                        choices=CELL_LAYOUTS)
    count: int = param(7, "Sites of the hexagonal grid (1, 7, 19, 37, ..., at most 10,000)",
                       check=between(1, MAX_CELLS))
    isd_m: float = param(500.0, "Inter-site distance of the hexagonal grid (1 m to 10,000 km: "
                         "sites that far apart no longer interfere; beyond, positions "
                         "overflow)", unit="m", check=in_interval(MIN_DISTANCE_M, MAX_ISD_M))
    wrap_around: bool = param(True, "Hexagonal grid: distances to the nearest image of each "
                              "site, the distance on the torus the cluster's copies tile "
                              "(every cell sees the same surroundings; cells.reuse must be 1)")
    density_per_km2: float = param(10.0, "Server density of the 'ppp' layout (at most one "
                                   "server per square metre; the servers the run draws, at its "
                                   "seed, are checked up front: at least one in the disc)",
                                   unit="1/km^2",
                                   check=in_interval(0, MAX_DENSITY_PER_KM2, low_open=True))
    region_m: float = param(1000.0, "Radius of the disc the 'ppp' layout draws servers in, and "
                            "of the region devices are dropped over (drop: region, non-hex; 1 m "
                            "to 100 km)", unit="m", check=_SPAN_M)
    drop: str = param("per-cell", "'per-cell': devices.count devices around each server, placed "
                      "by topology.layout (the annulus: devices.distance_m from it, uniform in "
                      "distance, whatever the ISD), each attached to it; 'region': "
                      "devices.count devices uniform over the region (the hexagons of a 'hex' "
                      "grid, else the disc of cells.region_m), each attached to the server "
                      "cells.association picks", choices=CELL_DROPS)
    pathloss: str = param("power-law", "'power-law': channel.ref_gain_db and "
                          "channel.pathloss_exponent (the paper's model); 'uma', 'umi': 3GPP "
                          "TR 38.901 urban macro / micro street canyon with LOS probability and "
                          "shadowing",
                          choices=PATHLOSS_MODELS)
    fc_ghz: float = param(3.5, "Carrier frequency f_c: of the 3GPP path loss, and of the "
                          "Doppler of moving devices under channel.doppler 'speed' (f_D = v f_c "
                          "/ c; with any cells.layout, 'single' included)", unit="GHz",
                          check=in_interval(0.5, 100.0))
    h_bs_m: Optional[float] = param(None, "Server antenna height (null: 25 m UMa, 10 m UMi)",
                                    unit="m", check=in_interval(1.0, 150.0, low_open=True))
    h_ut_m: float = param(1.5, "Device antenna height (the model's hE = 1 m holds up to 13 m)",
                          unit="m", check=in_interval(1.0, 13.0, low_open=True))
    association: str = param("max-rsrp", "Which server a device attaches to: 'max-rsrp', "
                             "'nearest', 'load-aware', 'joint' (radio plus compute)",
                             choices=ASSOCIATION_RULES)
    association_range_db: float = param(6.0, "'load-aware': servers within this of the best "
                                        "RSRP are candidates", unit="dB", check=ge(0))
    handover: str = param("a3", "Devices moving (mobility.model): 'a3', a neighbour better by "
                          "hysteresis_db for time_to_trigger_ms (measured every "
                          "measurement_period_ms); 'association': cells.association re-evaluated "
                          "for a cell's devices at each of its round boundaries",
                          choices=HANDOVER_TRIGGERS)
    reassociate: bool = param(False, "Static devices: cells.association re-evaluated at each "
                              "of a cell's round boundaries on the servers' loads now (the "
                              "devices attached), a device it moves handing over with its "
                              "context; per-cell drops start on their drop cell. false: each "
                              "device stays on the server of its drop")
    hysteresis_db: float = param(3.0, "Handover (devices moving, mobility.model): A3 hysteresis, "
                                 "a neighbour's RSRP above the serving one by this", unit="dB",
                                 check=ge(0))
    time_to_trigger_ms: float = param(160.0, "Handover: how long the A3 condition must hold",
                                      unit="ms", check=ge(0))
    measurement_period_ms: float = param(40.0, "Handover: RSRP measured (positions updated) "
                                         "every this (1 ms to a minute: NR measures every 5 "
                                         "ms or more; shorter ones made millions of events)",
                                         unit="ms", check=in_interval(1, MAX_STEP_MS))
    ping_pong_s: float = param(1.0, "Handover: a return to the cell left within this counts as "
                               "a ping-pong", unit="s", check=ge(0))
    backhaul_latency_ms: float = param(5.0, "Context migration: backhaul latency (at most a "
                                       "minute)", unit="ms", check=STEP_MS)
    backhaul_rate_mbps: float = param(1000.0, "Context migration: backhaul rate (at least 1 "
                                      "kbit/s)", unit="Mbit/s", check=ge(0.001))
    context_prompt_tokens: int = param(512, "Context migration: prompt tokens sent with the "
                                       "generated ones (ceil(log2 payload.vocab) bits each; at "
                                       "most 10 million)", check=between(0, MAX_REQUEST_TOKENS))
    servers: Mapping[int, ServerOverride] = param(
        FrozenMap(), "Per-cell server settings: cell index (0-based) -> verify_fixed_ms, "
        "verify_per_device_ms, dl_power_dbm (servers that differ)",
        key_allowed="cell index", default_text="{}")
    interference_csi: str = param(
        "last", "The interference the draft controller and the reactive policy see (as a flat "
        "PSD in their SINR): 'last', measured at the decision; 'mean', its time average over "
        "the run so far; 'none', none (blind: the SNR of one cell)",
        choices=INTERFERENCE_CSI)
    reuse: int = param(1, "Frequency reuse: 1 (every cell the whole band) or 3 (a third of "
                       "the band per cell: on a 'hex' grid the third (q - r) mod 3 of its axial "
                       "coordinates, so no neighbours share one, refused with "
                       "cells.wrap_around; other layouts the third c mod 3)", check=_REUSE)
    cross_link: bool = param(False, "Cross-link interference: another cell's DL correction at "
                             "this server's UL receptions (server-to-server link) and another "
                             "cell's UL correction at this cell's DL receivers (device-to-device "
                             "link), on overlapping co-channel subbands; their gains from "
                             "cells.pathloss with both ends at server (or device) height. "
                             "false: each direction meets only its own (synchronised TDD); "
                             "needs devices that stay put")


@cross_check
def _check_cells(sc) -> None:
    """Devices that move or re-associate share no cross links (nor one rate each:
    ``cross_checks``); a
    hexagonal grid needs a whole number of rings; a GraphML layout needs its file."""
    if sc.cells.layout == "single":
        if sc.cells.servers:
            raise ScenarioError("cells.servers", "per-cell server settings need several cells "
                                "(cells.layout 'single')", "expected {} (the server keys "
                                "set the one cell's server), or a layout of several cells")
        return
    moving = sc.mobility.model != "none" or sc.cells.reassociate
    if sc.cells.cross_link and moving:
        # the cross links' gains are drawn once, between the drop positions
        raise ScenarioError("cells.cross_link", "true is not supported with devices that move "
                            f"or re-associate (mobility.model {sc.mobility.model!r}, "
                            f"cells.reassociate {str(sc.cells.reassociate).lower()})",
                            "expected false, or mobility.model 'none' and cells.reassociate "
                            "false")
    count = sc.cells.count
    rings = round(((12 * count - 3) ** 0.5 - 3) / 6)
    if sc.cells.layout == "hex" and 3 * rings * rings + 3 * rings + 1 != count:
        raise ScenarioError("cells.count", f"{count} sites do not make a hexagonal grid",
                            "expected 1, 7, 19, 37, 61, ... (3n^2 + 3n + 1: n rings around "
                            "the centre)")
    if (sc.cells.layout == "hex" and sc.cells.reuse == 3 and sc.cells.wrap_around
            and count > 1):
        # the torus of N = 3n^2 + 3n + 1 sites (never a multiple of 3) has no reuse-3 plan that
        # its translations keep: some neighbours would share a sub-band (all 7 sites of n = 1
        # are mutual neighbours)
        raise ScenarioError("cells.reuse", f"3 is not supported with cells.wrap_around true on "
                            f"a hexagonal grid of {count} sites (no wrap-around cluster has a "
                            "reuse-3 plan)", "expected cells.reuse 1, or cells.wrap_around "
                            "false for reuse 3")
    if sc.cells.layout == "graphml" and not sc.topology.graphml_file:
        raise ScenarioError("topology.graphml_file", "is not set",
                            "expected the GraphML file whose 'server' nodes are the cells' "
                            "servers (cells.layout: graphml)")
    if sc.cells.layout == "graphml" and sc.topology.layout == "graphml":
        raise ScenarioError("topology.layout", "'graphml' is not supported with cells.layout "
                            "'graphml'", "expected 'annulus' or 'coordinates': the devices "
                            "are dropped by cells.drop, the file gives the servers")
