"""The one switch of the accelerations (``TENURE_ACCEL``, ``api/accel``): what it names is on,
what it leaves out is off, and a name it does not know stops the server naming the variable."""

from __future__ import annotations

import argparse
import gc
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.accel import ACCELERATIONS, parse_accel
from api.app import create_app
from api.serve_options import add_serve_options, option_problem
from api.settings import Settings
from verify.compact import CompactRange
from verify.dataintegrity import JCS_SUITE

T0 = 1_800_000_000_000


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("all", set(ACCELERATIONS)),
        ("none", set()),
        ("", set()),
        ("native-answer", {"native-answer"}),
        (" hot-route , orjson ", {"hot-route", "orjson"}),
    ],
)
def test_the_switch_names_what_is_on(text: str, expected: set[str]) -> None:
    assert parse_accel(text) == expected


@pytest.mark.parametrize("text", ["native", "all,native", "hot_route", "none,orjson"])
def test_an_unknown_name_is_refused_naming_it(text: str) -> None:
    with pytest.raises(ValueError, match="unknown acceleration"):
        parse_accel(text)


def test_tenure_serve_refuses_an_unknown_acceleration_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TENURE_ACCEL", "native-answer,turbo")
    parser = argparse.ArgumentParser()
    add_serve_options(parser)
    args = parser.parse_args(["--data", str(tmp_path / "d"), "--keys", str(tmp_path / "k")])
    problem = option_problem(args)
    assert problem is not None and "TENURE_ACCEL" in problem and "turbo" in problem


@pytest.fixture
def gc_state() -> Iterator[None]:
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


def _issuer_and_gc(root: Path, accel: str) -> tuple[bool, bool, tuple[int, int, int]]:
    """Whether the app's issuer writes natively, whether its recorder keeps a native frontier,
    and the gc thresholds once the app started."""
    settings = Settings(data_dir=root / "data", keys_dir=root / "keys", accel=accel)
    app = create_app(settings, lambda: T0)
    with TestClient(app):
        data = {"status": "pass", "ledger": {"treeSize": 1, "rootHash": "r"}}
        now = "2027-01-15T08:00:00.000Z"
        made = app.state.edge.issuer.native_answer(data, b"{}", None, None, now, JCS_SUITE)
        tree = app.state.edge.service.decider.recorder.tree
        return made is not None, not isinstance(tree, CompactRange), gc.get_threshold()


def test_each_acceleration_is_off_when_the_switch_leaves_it_out(
    tmp_path: Path, gc_state: None
) -> None:
    gc.set_threshold(700, 10, 10)
    native, frontier, thresholds = _issuer_and_gc(tmp_path / "none", "none")
    assert not native and not frontier and thresholds == (700, 10, 10)
    native, frontier, thresholds = _issuer_and_gc(tmp_path / "all", "all")
    assert native and frontier and thresholds == (100_000, 50, 1000)
