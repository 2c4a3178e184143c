"""Workload and architecture specs: the data classes, the einsum grammar and the YAML loaders."""

from mapsearch.spec.architecture import Architecture, Compute, Level, Link, as_fraction
from mapsearch.spec.load import (
    architecture_from_dict,
    architecture_to_dict,
    check_homes,
    homes_from_dict,
    load_architecture,
    load_homes,
    load_problem,
    load_workload,
    workload_from_dict,
    workload_to_dict,
)
from mapsearch.spec.workload import AffineIndex, Einsum, TensorAccess, Workload

__all__ = [
    "AffineIndex",
    "Architecture",
    "Compute",
    "Einsum",
    "Level",
    "Link",
    "TensorAccess",
    "Workload",
    "architecture_from_dict",
    "architecture_to_dict",
    "as_fraction",
    "check_homes",
    "homes_from_dict",
    "load_architecture",
    "load_homes",
    "load_problem",
    "load_workload",
    "workload_from_dict",
    "workload_to_dict",
]
