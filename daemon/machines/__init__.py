"""One memory on many machines (SPEC.md section 11, issue 47), on litestream.

``WSD_HOME_URL``, ``WSD_MACHINE`` and ``WSD_ROLE`` turn it on. Every machine replicates its
transcript.db to its own prefix of the person's storage (the replication of
:mod:`wsd.daemon.replica`, pointed there: :mod:`.places`); a satellite seals its settled
turns and follows home's memory.db into a read-only copy that its boot context and search
read (:mod:`.satellite`, :mod:`.follow`); home follows each satellite it lists and curates
their turns exactly once (:mod:`.ingest`), then replicates the person's memory to
``home/memory``.
"""
