"""The OrigaMIG policy (registry name "origamig"): the policy (`policy.py`: arrival rule, checks,
calls), its options in one record (`options.py`), triggers (`triggers.py`), one call run as a Work
(`call_work.py`), the reuse of unchanged calls (`reuse.py`), its counters (`call_counters.py`) and
side-by-side solves (`solve_pool.py`)."""
