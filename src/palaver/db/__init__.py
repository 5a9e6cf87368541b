"""The database: one concept per module.

- ``engine``: the engines (SQLite's pragmas and BEGIN, PostgreSQL's pools, the replica's).
- ``transaction``: ``Tx``, ``transaction()`` / ``notification()`` / ``grouped_write()``,
  the events a write carries to the bus after commit, the ``WriteStrategy`` of a database.
- ``group_commit``: SQLite's write strategy: a process's writers take turns, and concurrent
  writes share one commit (PostgreSQL's, ``ParallelWrites``, is in ``transaction``).
- ``bulk``: many small rows through the driver's ``executemany``.
- ``locks``: rows held until commit; the queue of a process's SQLite writers.
- ``read_fence``: whose reads stay on the primary after their writes (with a replica).
- ``database``: ``Database``, which holds them together for one process.
"""
