"""OrigaMIG: arrival rule, triggers, Algorithm 1, restricted BILP calls and the decision rule."""
