"""The chaos soak: every promise checked together, under combined faults, from one seed.

``python -m soak --minutes 10 --seed 7`` (``make soak``) deploys a workspace with the real
binaries (``wsd bootstrap --standalone``, a real supervisord running ``wsd run``), points it
at a local Bridge stand-in whose replies the soak can spoil, and for the given minutes runs:

* **writers** (:mod:`soak.writers`): 8 processes sending whole agent sessions through the
  real hook paths (the ``wsd-hook`` command and the SDK callbacks), some with
  ``<private>`` spans and secrets from the redaction corpus, some forced through the spool;
  each keeps a manifest of exactly what it sent;
* a **fault scheduler** (:mod:`soak.faults`) that at seeded random moments kills the daemon
  with SIGKILL, makes the Bridge reset, hang, rate-limit, fail, garble, truncate, flood or
  answer carelessly, fills the disk for the daemon (RLIMIT_FSIZE), freezes and thaws it,
  holds the transcript's write lock (so hooks spool), runs ``wsd rebuild``, ``wsd backup``
  and ``wsd doctor --fix``, edits a curated file by hand, starts a second ``wsd run``, and
  once deletes memory.db while the daemon is stopped;
* **samplers**: the daemon's RSS, and ``wsd status`` against what supervisord says.

Then the faults stop, everything is drained, and :mod:`soak.invariants` checks what must
hold whatever happened, printing each with its count. The seed is printed first; the same
seed replays the same schedule (the machine's timing still differs run to run).
"""
