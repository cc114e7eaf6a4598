"""`python -m multispin_sim` is the `multispin-sim` command."""
from multispin_sim.cli import entry

entry()
