"""``wsd rebuild``: the whole history re-curated through the pipeline into a fresh memory.db
(:mod:`.rebuild`), replaying the live run's batches and a person's revisions as they
happened (:mod:`.replay`), then swapped in."""
