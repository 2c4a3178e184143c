"""Solving a tree architecture: every compute path, and the best of them.

A tree file (``docs/tree-format.md``) with several computes flattens into
several paths (:func:`mapsearch.spec.tree_paths.flatten`); :func:`solve_tree`
solves the workload on each and picks the best.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Mapping

from mapsearch.errors import InfeasibleError, MapsearchError, SolverTimeout, SpecError
from mapsearch.model.options import SolveOptions
from mapsearch.model.problem import Problem, UnsupportedProblem
from mapsearch.solve.run import SolveResult, solve
from mapsearch.spec.architecture import Architecture
from mapsearch.spec.constraints import Constraints, check_constraints
from mapsearch.spec.tree_nodes import Tree
from mapsearch.spec.tree_paths import FlatPath, UnusablePath, flatten, path_architecture, path_constraints
from mapsearch.spec.workload import Workload

log = logging.getLogger(__name__)

__all__ = ["NoUsablePath", "PathOutcome", "PathsTimedOut", "path_rules", "solve_tree"]


class NoUsablePath(MapsearchError):
    """Every path of a tree was skipped; the message gives each path's reason."""


class PathsTimedOut(NoUsablePath, SolverTimeout):
    """Every path of a tree ran out of time: a timeout (the CLI's exit 3), as for one architecture."""


@dataclass(frozen=True)
class PathOutcome:
    """One path's result: a SolveResult, or why it was skipped."""

    compute_name: str
    architecture: Architecture
    result: SolveResult | None = None
    skipped: str | None = None


def _rank(result: SolveResult, objective: str) -> tuple:
    figures = result.schedule.predicted
    time = figures.time if figures is not None else result.phases[0].value
    words = figures.words_total if figures is not None else result.phases[-1].value
    if objective == "time":
        return (time, words)
    if objective == "words":
        return (words, time)
    return (result.phases[0].value, time, words)


def path_rules(path: FlatPath, arch: Architecture, workload: Workload, homes: Mapping[str, str],
               extra: Constraints) -> Constraints:
    """The path's ``tensors`` rules (:func:`path_constraints`) and ``extra`` constraints, checked against ``arch``.

    Raises :class:`UnusablePath` when the rules contradict the homes and a
    SpecError when the constraints name what the path lacks.
    """
    rules = path_constraints(path, workload, homes)
    merged = replace(extra, name=extra.name or rules.name, keep=rules.keep + extra.keep)
    check_constraints(merged, workload, arch, "constraints")
    return merged


def solve_tree(tree: Tree, workload: Workload, homes: Mapping[str, str] | None = None,
               options: SolveOptions | None = None, constraints: Constraints | None = None,
               ) -> tuple[str, SolveResult, tuple[PathOutcome, ...]]:
    """Solve the workload on every path; return ``(best compute name, its SolveResult, every outcome)``.

    The best path has the best objective (``time``: the shortest time, then
    the fewest words; ``words``: the fewest words, then the time; ``energy``:
    the energy); a tie goes to the path listed first. A path the solver
    cannot handle (:class:`~mapsearch.model.problem.UnsupportedProblem`, e.g.
    a mesh at the top level), whose rules contradict the homes, that is infeasible or runs out
    of time is skipped with its reason; :class:`NoUsablePath` when every path
    is. ``constraints`` (optional) are added to every path's ``tensors``
    rules; a path lacking a level they name is skipped.
    """
    options = options or SolveOptions()
    extra = constraints or Constraints()
    homes = dict(homes or {})
    paths = flatten(tree)
    bound = [(p, path_architecture(p, workload)) for p in paths]  # unknown names: an error before any solve
    outcomes: list[PathOutcome] = []
    for path, arch in bound:
        try:
            merged = path_rules(path, arch, workload, homes, extra)
        except UnusablePath as e:
            outcomes.append(PathOutcome(path.compute_name, arch, skipped=str(e)))
            continue
        except SpecError as e:
            outcomes.append(PathOutcome(path.compute_name, arch, skipped=f"constraints do not fit this path: {e}"))
            continue
        problem = Problem(workload, arch, tuple(sorted(homes.items())))
        try:
            result = solve(problem, merged, options)
        except UnsupportedProblem as e:
            reason = f"not supported by the solver yet: {e}"
        except InfeasibleError as e:
            reason = f"infeasible: {e}"
        except SolverTimeout as e:
            reason = f"timed out: {e}"
        else:
            log.info("path %s: %s, %s", path.compute_name, result.status, _rank(result, options.objective))
            outcomes.append(PathOutcome(path.compute_name, arch, result=result))
            continue
        log.info("path %s skipped: %s", path.compute_name, reason)
        outcomes.append(PathOutcome(path.compute_name, arch, skipped=reason))
    solved = [o for o in outcomes if o.result is not None]
    if not solved:
        reasons = "; ".join(f"{o.compute_name}: {o.skipped}" for o in outcomes)
        timed_out = all(o.skipped.startswith("timed out: ") for o in outcomes)
        error = PathsTimedOut if timed_out else NoUsablePath
        raise error(f"{tree.source}: no path of {tree.name!r} could be solved ({reasons})")
    best = min(solved, key=lambda o: _rank(o.result, options.objective))  # min keeps the first of equals
    return best.compute_name, best.result, tuple(outcomes)
