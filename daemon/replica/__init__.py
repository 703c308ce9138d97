"""Continuous replication of both databases with litestream (issue 35).

``WSD_REPLICA_URL`` turns it on. ``wsd run`` then supervises one ``litestream replicate``
child (:mod:`.supervisor`) with a config it renders (:mod:`.litestream`); every erasure holds
it off and leaves no local copy of the erased words (:mod:`.hold`); ``wsd status``, ``wsd
doctor`` and the metrics read its position and lag (:mod:`.position`); ``wsd restore
--from-replica`` brings both databases back (:mod:`.restore`).
"""
