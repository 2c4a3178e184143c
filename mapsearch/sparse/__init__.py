"""Sparse tensor algebra on mapsearch schedules (docs/sparse.md).

- :mod:`~mapsearch.sparse.tensor`: COO tensors, file readers, fibertrees;
- :mod:`~mapsearch.sparse.density`: uniform random (``fromRandom``) and fixed-structured densities;
- :mod:`~mapsearch.sparse.format`: per-rank U/C formats (CSR, CSF, COO, CISS) and their word counts;
- :mod:`~mapsearch.sparse.partition`: ``uniform_shape``, ``uniform_occupancy``, ``uniform_slice``;
- :mod:`~mapsearch.sparse.teaal_partition`: a TeAAL spec's ``partitioning:`` as the replay's partition;
- :mod:`~mapsearch.sparse.replay`: a schedule replayed on real nonzeros;
- :mod:`~mapsearch.sparse.model`: expected words and effectual ops under a density model.
"""

from mapsearch.sparse.density import Banded, Dense, NofM, Uniform
from mapsearch.sparse.format import Format, ciss, coo, csf, csr, dense
from mapsearch.sparse.partition import Partition, uniform_occupancy, uniform_shape, uniform_slice
from mapsearch.sparse.replay import SparseReplay, replay_sparse
from mapsearch.sparse.teaal_partition import TeaalPartitionError, teaal_partition
from mapsearch.sparse.tensor import SparseTensor, read_tensor

__all__ = ["Banded", "Dense", "NofM", "Uniform", "Format", "ciss", "coo", "csf", "csr", "dense", "Partition",
           "uniform_occupancy", "uniform_shape", "uniform_slice", "SparseReplay", "replay_sparse", "SparseTensor",
           "read_tensor", "TeaalPartitionError", "teaal_partition"]
