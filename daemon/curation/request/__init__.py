"""Taking turns and rendering the request: the first stage of a batch.

:mod:`.batch` (the turns of one call, cut to the character budget, and why none were
taken), :mod:`.take` (settling, the ledger check and the claim, once per pass),
:mod:`.rendering` (what of a turn the curator is shown, per lane), :mod:`.excerpt` (the
fact-carrying parts of a long text), :mod:`.prompt` (the instructions and the request
around the turns, and what it showed), :mod:`.caching` (when a prefix is worth marking).
"""
