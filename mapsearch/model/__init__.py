"""The CP-SAT encoding of the mapping space of one einsum.

``problem`` checks what the encoding supports and derives per-dimension facts;
``chains`` enumerates each dimension's tile-extent chains with exact piece
counts; one module per family of constraints (``order``, ``traffic``,
``capacity``, ``links``, ``compute``, ``user``); ``build`` assembles the model
and ``decode`` turns a solution back into a :class:`~mapsearch.schedule.Schedule`.
Only this package (and ``solve``) imports ``ortools``.
"""
