"""Every SQL verb the daemon uses: the ledger and turns (ledger), pending actions, the
archive (turn index, imports), the workspace index and canvas map, maintenance and backup.

Nothing else in the daemon holds SQL, except the read-only queries of memory.search.
"""
