"""`origamig serve`: OrigaMIG online, as an HTTP service beside a scheduler (docs/service.md).

store.py (the SQLite state), requests.py (VM requests and pods read with the snapshot reader),
live.py (the live cluster: the policy's arrival rule on the stored state), k8s.py (the scheduler
extender's filter and prioritize), app.py (the Starlette application) and routes.py (its
handlers), run.py (start uvicorn).
"""
