"""Turning captured turns into memory, a folder per stage of a batch.

One batch goes through the stages in order (:class:`.pipeline.Pipeline`, the one place
that strings them together):

1. :mod:`.request`: taking turns (settled, checked against the ledger, claimed) and
   rendering the request the curator is shown (the lane's rendering of each turn, the
   instructions, the memory files with their lines numbered, the prompt cache's markers).
2. :mod:`.bridge`: the call through the Bridge (one retry layer, bounded and interruptible),
   its answer read, its failure in words, what it cost (the meter, the daily cap) and the
   outage backoff after it failed.
3. :mod:`.judging`: judging the reply, one entry (:func:`.judging.judge`): the reply parsed,
   whose words hold each item (grounding), the guards (line-addressed edits, loss and size,
   erosion over a day), so no reply can silently lose what was learned.
4. :mod:`.commit`: committing what was judged in one memory.db transaction, the
   exactly-once point (the ledger refuses turns already covered).

Beside them, :mod:`.economy` sends the same requests as one Message Batch at half price and
applies each result through the same judging and commit, :mod:`.loop` decides when (the
worker's pass: trigger, lane, budget, take, curate; the chores between batches in one ordered
list) and follows each commit up, and :mod:`.rebuild` runs the pipeline over the whole
history into a fresh memory.db (``wsd rebuild``).
"""
