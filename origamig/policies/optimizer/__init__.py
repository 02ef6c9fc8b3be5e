"""The OrigaMIG policy (registry name "origamig"): arrival rule, triggers, calls (`decision.py`)."""
