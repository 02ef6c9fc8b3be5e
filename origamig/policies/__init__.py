"""Placement policies behind one Protocol (`base.py`), found by name in a lazy registry.

`arrival_rule.py` is the shared first-fit arrival rule; `ff.py`, `mfi.py` and `tc/` (policy, rule,
compaction, bookkeeping) are the baselines; `optimizer/` is the OrigaMIG policy (registry
name "origamig"); `opt.py` is the full BILP used as a reference. Importing this package imports no
policy: `base.make_policy(name)` imports the one it needs.
"""
