"""The name -> class registry of the policy families (defined in ``model.registry``, shared by
every component family)."""
from ..model.registry import Registry

__all__ = ["Registry"]
