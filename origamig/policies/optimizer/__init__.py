"""The OrigaMIG policy (registry name "origamig"): arrival rule, triggers, calls (`call/decision.py`);
options in one record (`options.py`)."""
