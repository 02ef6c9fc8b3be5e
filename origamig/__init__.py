"""origamig: MIG-aware VM placement with a neighborhood-restricted BILP and live migration."""

__version__ = "0.1.0"
