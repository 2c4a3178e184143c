"""A network characterized in one call: the model and profiles by name, file or object, and the tables written.

:func:`characterize` is what ``mapsearch characterize`` and
:func:`mapsearch.api.characterize` run: it reads the model (a built-in
table, a YAML table, an ONNX file or a PyTorch ``module:callable``) and the
profiles (``cpu``, ``gpu``, ``tpu``, ``kpu`` or files), solves every
distinct layer on every profile through the sweep machinery (resumable in
``out_dir``), solves chain pairs, adds up, and writes the tables of
:mod:`mapsearch.characterize.report` to ``out_dir``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence, Union

from mapsearch.characterize.chains import find_pairs
from mapsearch.characterize.fusion import lower_all
from mapsearch.characterize.graph import Model
from mapsearch.characterize.models import load_model, model_from_dict
from mapsearch.characterize.profiles import Profile, load_profile
from mapsearch.characterize.report import write_outputs
from mapsearch.characterize.run import Characterization, characterize as characterize_layers, check_distinct, layer_cases
from mapsearch.errors import MapsearchError, UsageError
from mapsearch.sweep.lock import DirectoryLock, check_out_directory
from mapsearch.sweep.runner import Progress, check_scheduler
from mapsearch.solve.named_options import check_seconds

__all__ = ["CharacterizeStart", "characterize"]


@dataclass(frozen=True)
class CharacterizeStart:
    """What a run is about to do, handed to ``on_start`` before the first layer is solved."""

    model: str
    layers: int
    einsums: int  # layers that are einsums (the others only move data)
    distinct_shapes: int
    profiles: int
    cases: int  # distinct (shape, profile) solves
    pairs: int  # chain pairs, solved as chains after the layers
    distinct_pairs: int
    macs: int  # of the einsum layers: the work the totals add up
    out_dir: Path


def characterize(model: Union[str, Path, Mapping[str, Any], Model], profiles: Sequence[Union[str, Path, Profile]],
                 out_dir: str | Path | None = None, *, input_shapes: Sequence[Sequence[int]] | None = None,
                 workers: int | None = None, scheduler: str | None = None, time_limit: float = 60.0,
                 work_limit: float | None = None, retry_failed: bool = False, chain_fusion: bool = True,
                 on_start: Callable[[CharacterizeStart], None] | None = None,
                 progress: Callable[[Progress], None] | None = None,
                 chain_progress: Callable | None = None) -> Characterization:
    """Characterize ``model`` on ``profiles`` (module docstring); ``out_dir`` defaults to ``./characterize-<model>``.

    ``model``: a built-in table's name, a file, a dict in the layer-table
    format (``mapsearch/characterize/models/``) or a :class:`Model`.

    ``input_shapes`` feed a PyTorch module; ``time_limit`` is per distinct
    layer (wall-clock seconds) and ``work_limit``, if given, per solver phase
    (CP-SAT deterministic seconds: the statuses do not depend on the load);
    ``chain_fusion=False`` solves every einsum alone. The result's
    ``layers``, ``totals`` and ``chains`` rows are also in ``out_dir``
    (CSV and JSON) and as DataFrames (``to_dataframe``).
    """
    if workers is not None and workers < 1:
        raise UsageError("workers", "an int >= 1", workers)
    check_seconds("time_limit", time_limit)
    if work_limit is not None:
        check_seconds("work_limit", work_limit, "deterministic seconds > 0")
    check_scheduler(scheduler)
    if isinstance(model, Model):
        net = model
    elif isinstance(model, Mapping):
        net = model_from_dict(dict(model), "<dict>")
    else:
        net = load_model(str(model), input_shapes)
    profs = [p if isinstance(p, Profile) else load_profile(str(p)) for p in profiles]
    check_distinct(profs)  # before the output directory is made
    out = Path(out_dir) if out_dir is not None else Path(f"characterize-{net.name}")
    check_out_directory(out)
    if on_start is not None:
        layers = lower_all(net.nodes)
        cases, _ = layer_cases(layers, profs, time_limit, work_limit=work_limit)
        einsums = [layer for layer in layers if layer.einsum]
        pairs = find_pairs(net.nodes, layers) if chain_fusion else []
        on_start(CharacterizeStart(net.name, len(layers), len(einsums), len({l.shape_key() for l in einsums}),
                                   len(profs), len(cases), len(pairs), len({p.key for p in pairs}),
                                   sum(l.macs for l in einsums), out))
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise MapsearchError(f"out_dir: cannot create {out}: {e.strerror or e}") from None
    with DirectoryLock(out, "characterize"):  # one process per directory, as for a sweep
        result = characterize_layers(net, profs, out, workers=workers, scheduler=scheduler, time_limit=time_limit,
                                     work_limit=work_limit, retry_failed=retry_failed, progress=progress,
                                     chain_fusion=chain_fusion, chain_progress=chain_progress)
        result.tables.update(write_outputs(result, out))
    return result
