"""The paper's tables and figures: Tables 8–12 and Figs. 3–8, rerun (`python -m benchmarks.paper.<name>`)."""
