"""The service's web stack loads only when the service runs: other commands never import it."""

from __future__ import annotations

from tests.cli.test_cli_startup import _loaded_after

WEB = ("starlette", "uvicorn", "httpx", "fastapi")


def test_other_commands_never_load_the_web_stack() -> None:
    code = "import origamig.cli.app, origamig.cli.solve, origamig.cli.check, origamig.cli.simulate"
    assert _loaded_after(code, WEB) == set()


def test_importing_the_serve_command_loads_no_web_stack_until_it_runs() -> None:
    assert _loaded_after("import origamig.cli.serve, origamig.serve.live, origamig.serve.k8s", WEB) == set()


def test_the_app_is_starlette_on_uvicorn() -> None:
    assert {"starlette"} <= _loaded_after("import origamig.serve.app", WEB)
