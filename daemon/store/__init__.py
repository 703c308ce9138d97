"""Every SQL verb the daemon uses, behind one door: :class:`wsd.daemon.store.store.Store`
(its facets reach the archive, the vectors, the workspace tables and maintenance).

Nothing else in the daemon holds SQL or opens a connection, except the read-only queries of
memory.search.
"""
