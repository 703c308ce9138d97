"""The Bridge: one curator call, its retries, what it answered, what it cost.

:mod:`.client` (the call, tenacity's one retry layer, ``Outage``/``Shutdown``/
``BatchRejected``), :mod:`.answer` (a Messages API answer read the same in both lanes),
:mod:`.failure` (a failed call in words), :mod:`.spend` (prices, the meter that books every
request, the daily cap) and :mod:`.outage` (when the next call may be made after a failure).
"""
