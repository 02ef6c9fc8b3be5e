"""`origamig serve` over HTTP: a real server on 127.0.0.1, requests with httpx.

Placements are judged by the independent checker (`judge/check.py`) on the snapshot the service
reports, read back by the snapshot reader; refused requests must leave that snapshot unchanged.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest

from tests.paths import ROOT
from tests.serve_helpers import EXAMPLES, TOKEN, Server, in_process, valid

SEED = EXAMPLES / "fragmented-a100.json"
QUIET = ("check_interval_s=1e9",)  # no optimizer check during these tests: arrivals see the seed's PMs
JSON = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    with Server(tmp_path_factory.mktemp("serve"), seed=SEED, options=QUIET) as srv:
        yield srv


def test_healthz_is_open_and_every_other_route_needs_the_token(server: Server) -> None:
    assert httpx.get(f"{server.url}/healthz").status_code == 200
    routes = [("GET", "/v1/snapshot"), ("POST", "/v1/vms"), ("DELETE", "/v1/vms/vm1"),
              ("POST", "/k8s/filter"), ("POST", "/k8s/prioritize")]  # fmt: skip
    for token in (None, "wrong", TOKEN[:-1], TOKEN + "x"):
        headers = {} if token is None else {"Authorization": f"Bearer {token}"}
        for method, path in routes:
            r = httpx.request(method, server.url + path, headers={**headers, **JSON}, content=b"{}")
            assert r.status_code == 401, (method, path, token)
            assert "token" in r.json()["error"]


def test_snapshot_is_the_seed_state(server: Server) -> None:
    seed = json.loads(SEED.read_text())
    with server.client() as c:
        doc = c.get("/v1/snapshot").json()
    assert valid(doc) == valid(seed)


def test_a_placed_vm_is_in_the_snapshot_where_the_reply_said_and_valid(server: Server) -> None:
    entry = {"id": "api-new", "cpu": 4, "ram_gb": 16, "gis": ["1g.5gb"]}
    with server.client() as c:
        before = valid(c.get("/v1/snapshot").json())
        r = c.post("/v1/vms", json=entry)
        assert r.status_code == 201, r.text
        body = r.json()
        doc = c.get("/v1/snapshot").json()
        after = valid(doc)
        assert {k: v for k, v in after.items() if k != "api-new"} == before
        reported = next(v for v in doc["vms"] if v["id"] == "api-new")
        assert reported["placement"] == body["placement"]
        status = c.get("/v1/vms/api-new").json()
        assert status == {"id": "api-new", "status": "running", "placement": body["placement"]}
        assert c.post("/v1/vms", json=entry).status_code == 409
        assert c.delete("/v1/vms/api-new").status_code == 204
        assert c.delete("/v1/vms/api-new").status_code == 404
        assert valid(c.get("/v1/snapshot").json()) == before


def test_a_vm_that_fits_nowhere_waits(server: Server) -> None:
    with server.client() as c:
        r = c.post("/v1/vms", json={"id": "api-big", "cpu": 28, "ram_gb": 112, "gis": ["7g.40gb"]})
        assert r.status_code == 202, r.text
        assert r.json()["status"] == "pending"
        doc = c.get("/v1/snapshot").json()
        entry = next(v for v in doc["vms"] if v["id"] == "api-big")
        assert "placement" not in entry
        assert c.get("/v1/vms/api-big").json() == {"id": "api-big", "status": "pending"}
        assert c.delete("/v1/vms/api-big").status_code == 204
        assert c.get("/v1/vms/api-big").status_code == 404


BAD = [
    (b'{"id": "x", "cpu": 4,', JSON, 400, "body"),
    (b'{"id": "x", "cpu": NaN, "ram_gb": 1, "gis": []}', JSON, 400, "NaN"),
    (json.dumps({"id": "x", "cpu": 4, "ram_gb": 16, "gis": ["9g.99gb"]}).encode(), JSON, 400, "gis[0]"),
    (json.dumps({"id": "x", "cpu": -4, "ram_gb": 16, "gis": []}).encode(), JSON, 400, "cpu"),
    (json.dumps({"id": "x", "ram_gb": 16, "gis": []}).encode(), JSON, 400, "cpu"),
    (json.dumps({"cpu": 4, "ram_gb": 16, "gis": []}).encode(), JSON, 400, "id"),
    (json.dumps([1, 2]).encode(), JSON, 400, "body"),
    (json.dumps({"id": "x", "cpu": 4, "ram_gb": 16, "gis": [], "pm_id": "pm0"}).encode(), JSON, 400, "pm_id"),
    (json.dumps({"id": "x", "cpu": 4, "ram_gb": 16, "gis": [], "pm": "pm9"}).encode(), JSON, 400, "pm9"),
    (
        json.dumps(
            {"id": "x", "cpu": 4, "ram_gb": 16, "gis": [], "pm": "pm0", "placement": {"pm": "pm0", "gis": []}}
        ).encode(),
        JSON,
        400,
        "not both",
    ),
    (json.dumps({"id": "vm1", "cpu": 4, "ram_gb": 16, "gis": []}).encode(), JSON, 409, "vm1"),
    (b'{"id": "x", "cpu": 4, "ram_gb": 16, "gis": []}', {"Content-Type": "text/plain"}, 415, "Content-Type"),
    (b'{"id": "x", "pad": "' + b"x" * (2 << 20) + b'"}', JSON, 413, "body"),
    (b"\xff\xfe", JSON, 400, "UTF-8"),
]


# Short ids: a test's id reaches child processes' environment (PYTEST_CURRENT_TEST), and the 2 MB body
# as an id made a server started by this test's fixture fail to exec ("Argument list too long").
@pytest.mark.parametrize(
    ("body", "headers", "status", "names"),
    BAD,
    ids=[f"{n}-{status}-{names}" for n, (*_, status, names) in enumerate(BAD)],
)
def test_bad_input_is_a_clear_4xx_and_changes_nothing(
    server: Server, body: bytes, headers: dict, status: int, names: str
) -> None:
    with server.client() as c:
        before = c.get("/v1/snapshot").json()
        r = c.post("/v1/vms", content=body, headers=headers)
        assert r.status_code == status, r.text
        err = r.json()
        assert names in err["error"] and err["problems"]
        assert c.get("/v1/snapshot").json() == before


def test_a_restart_resumes_exactly(tmp_path: Path) -> None:
    with Server(tmp_path, seed=SEED, options=QUIET) as srv, srv.client() as c:
        assert (
            c.post("/v1/vms", json={"id": "r1", "cpu": 4, "ram_gb": 16, "gis": ["1g.5gb"]}).status_code == 201
        )
        assert (
            c.post("/v1/vms", json={"id": "r2", "cpu": 28, "ram_gb": 112, "gis": ["7g.40gb"]}).status_code
            == 202
        )
        assert c.delete("/v1/vms/vm1").status_code == 204
        before = c.get("/v1/snapshot").json()
    with Server(tmp_path, state=srv.state, options=QUIET) as again, again.client() as c:
        assert c.get("/v1/snapshot").json() == before


def test_a_new_state_without_from_is_refused(tmp_path: Path) -> None:
    srv = Server(tmp_path)
    with pytest.raises(RuntimeError, match="error: --from"):
        srv.start()
    assert not srv.state.exists()


def test_a_bad_seed_is_refused_and_leaves_no_state(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps({"version": 1, "pms": [{"id": "pm0", "cpu": -1, "ram_gb": 1, "gpus": []}], "vms": []})
    )
    srv = Server(tmp_path, seed=bad)
    with pytest.raises(RuntimeError, match=r"error: pms\[0\]\.cpu"):
        srv.start()
    assert not srv.state.exists()


def test_every_route_is_a_row_of_the_docs_routes_table_and_every_row_a_route(tmp_path: Path) -> None:
    # docs/service.md#routes documents each route: the app's routes and the table's rows are the same
    # (method, path) pairs, path parameters whatever their names.
    def shape(path: str) -> str:
        return re.sub(r"\{[^}]*\}", "{}", path)

    live, client = in_process(tmp_path, SEED)
    served = {(m, shape(r.path)) for r in client.app.routes for m in r.methods if m != "HEAD"}
    page = (ROOT / "docs" / "service.md").read_text()
    table = page[page.index("## Routes") : page.index("## Plans")]
    rows = {(m, shape(p)) for m, p in re.findall(r"^\| `(GET|POST|PUT|DELETE|PATCH) (/\S*)` \|", table, re.M)}
    assert served == rows
    live.store.close()
