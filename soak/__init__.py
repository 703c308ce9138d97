"""The chaos soak: every promise checked together, under combined faults, from one seed.

``python -m soak --minutes 10 --seed 7`` (``make soak``) deploys a workspace with the real
binaries (``wsd bootstrap --standalone``, a real supervisord running ``wsd run``), points it
at a local Bridge stand-in whose replies the soak can spoil, and for the given minutes runs:

* **writers** (:mod:`soak.writers`): 8 processes sending whole agent sessions through the
  real hook paths (the ``wsd-hook`` command and the SDK callbacks), some with
  ``<private>`` spans and secrets from the redaction corpus, some forced through the spool;
  each keeps a manifest of exactly what it sent;
* a **fault scheduler** (:mod:`soak.faults`) that at seeded random moments kills the daemon
  with SIGKILL, makes the Bridge reset, hang, rate-limit, fail, garble, truncate, flood,
  bloat (more than an answer can hold) or answer carelessly, fills the disk for the daemon
  (RLIMIT_FSIZE), freezes and thaws it, holds the transcript's write lock (so hooks spool),
  runs ``wsd rebuild``, ``wsd backup`` and ``wsd doctor --fix``, edits a curated file by
  hand, starts a second ``wsd run``, once deletes memory.db while the daemon is stopped,
  and on the economy lane (the daemon's Message Batches, polled every 1-5 s, ended by the
  stand-in 0-3 s after their create) makes
  a batch expire, error, lose its results (truncated, a line garbled or missing), hang a
  poll or a read, name a foreign results_url or be forgotten by the Bridge, runs an urgent
  ``wsd flush`` now and then (the prompt lane, while a batch is out), and once takes the batches API
  away (then moves the daemon's clock a day on, for the lane's daily probe);
* **samplers**: the daemon's RSS, and ``wsd status`` against what supervisord says.

Then the faults stop, every Message Batch is ended, everything is drained (no batch left in
flight), and :mod:`soak.invariants` checks what must hold whatever happened, printing each
with its count. The seed is printed first; the same
seed replays the same schedule (the machine's timing still differs run to run).
"""
