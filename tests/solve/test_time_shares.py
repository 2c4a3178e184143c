"""A solve under a caller's budget shares out what that budget leaves, not its nominal time limit.

Attention on ``tpu-v4i-like`` (examples/chains/attention.yaml) had no
unfused schedule: its first einsum took the whole turn (its words phase,
under a nominal limit of 120 s) and the second ran out enumerating its tile
chains. Each einsum of an unfused chain now gets an equal share of the time
left for the einsums to come, and ``solve`` computes its searches' shares
from the time its caller's budget leaves.
"""

from __future__ import annotations

import dataclasses

import pytest

import mapsearch.budget as budget
from mapsearch.model.options import SolveOptions
from mapsearch.presets import load_preset
from mapsearch.solve import chain, run
from mapsearch.spec.workload import WorkloadGraph


def test_an_options_limit_longer_than_the_budget_left_is_cut_to_it() -> None:
    options = SolveOptions(time_limit=120)
    assert run._within_parent(options) is options  # no budget: the nominal limit
    with budget.within(budget.Budget(3.0)):
        cut = run._within_parent(options)
    assert 2.5 < cut.time_limit <= 3.0 and dataclasses.replace(cut, time_limit=120) == options
    with budget.within(budget.Budget(300.0)):
        assert run._within_parent(options) is options  # a longer budget: the options' own limit


@pytest.mark.parametrize("einsums", [2, 3])
def test_each_einsum_of_an_unfused_chain_gets_an_equal_share_of_the_time_left(monkeypatch, einsums: int) -> None:
    texts = ["B[m,n] += A[m,k] * W1[k,n]", "C[m,p] += B[m,n] * W2[n,p]", "D[m,q] += C[m,p] * W3[p,q]"][:einsums]
    graph = WorkloadGraph.from_texts("chain", texts, {d: 4 for d in "mnkpq" if any(d in t for t in texts)})
    shares = []

    def record(problem, options):  # a solve that takes no time: each share is of the time still left
        shares.append(budget.current().left())
        return problem.workload.name

    monkeypatch.setattr(chain, "solve", record)
    with budget.within(budget.Budget(30.0)):
        outcome = chain.solve_unfused(graph, load_preset("edge-3level"), {}, SolveOptions(time_limit=120))
    assert len(outcome.stages) == einsums
    # The first einsum gets 30 / n, not the whole 30 s; a fast one leaves the rest to those after it.
    assert shares == pytest.approx([30.0 / (einsums - i) for i in range(einsums)], abs=0.2)
