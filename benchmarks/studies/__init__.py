"""Simulation sweeps beyond the paper: OrigaMIG's variants and what-ifs on the example fleets."""
