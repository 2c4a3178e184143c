"""characterize stopped by Ctrl-C keeps no result it did not finish, and a rerun completes it."""

from __future__ import annotations

from mapsearch.budget import Budget, within
from mapsearch.characterize.chains import CACHE_NAME
from mapsearch.characterize.models import load_model
from mapsearch.characterize.profiles import load_profile
from mapsearch.characterize.run import characterize
from mapsearch.sweep.store import DB_NAME, ResultStore


def test_a_stopped_characterize_stores_no_result_and_the_rerun_completes(tmp_path) -> None:
    model, profiles = load_model("mlp"), [load_profile("cpu-quick")]
    stopped = Budget(None)
    stopped.stop()  # as the first Ctrl-C does (mapsearch/solve/interrupt.py)
    with within(stopped):
        result = characterize(model, profiles, tmp_path, workers=1, time_limit=30)
    assert result.outcome.interrupted
    with ResultStore(tmp_path / DB_NAME) as store:
        assert set(store.statuses().values()) <= {"INTERRUPTED"}  # nothing cut short is a result
    assert not (tmp_path / CACHE_NAME).exists() and all(r["status"] != "OPTIMAL" for r in result.layers)
    assert all(c["decision"].startswith("separate: ") for c in result.chains)

    again = characterize(model, profiles, tmp_path, workers=1, time_limit=30, chain_fusion=False)
    assert not again.outcome.interrupted
    with ResultStore(tmp_path / DB_NAME) as store:
        assert set(store.statuses().values()) == {"OPTIMAL"}
    assert {r["status"] for r in again.layers if r["kind"] == "einsum"} == {"OPTIMAL"}
