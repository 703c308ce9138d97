"""Semantic matching in ``wsd run``: the embedding step after each pass of the loop, and
the socket search_memory asks (daemon/memory/semantic/server.py)."""

from __future__ import annotations

from wsd.daemon.curation.embedding import Embedder
from wsd.daemon.curation.worker import PassResult, Step, Worker
from wsd.daemon.memory.semantic import missing
from wsd.daemon.memory.semantic.server import SemanticServer
from wsd.daemon.runtime.config import Config


def wire(config: Config, worker: Worker) -> SemanticServer | None:
    """Start semantic matching for ``worker``; None when switched off (WSD_SEMANTIC=false)
    or the [semantic] extra is not installed (search then ranks by words alone)."""
    if not config.semantic:
        worker.status.update(semantic="off: WSD_SEMANTIC=false")
        return None
    reason = missing()
    if reason is not None:
        worker.log.info("semantic_off", reason=reason)
        # What wsd status shows: the setting alone said "semantic: True" without the extra.
        worker.status.update(semantic=f"off: {reason}")
        return None
    worker.status.update(semantic="on")
    embedder = Embedder(worker.store, worker.log)
    server = SemanticServer(worker.store, on_use=worker.shedder.busy)
    failed: list[str] = []
    paused: list[bool] = [False]

    def after_pass(result: PassResult) -> bool:
        # Listen from the first pass on: the workspace is known to be usable by then.
        if server.sock is None:
            try:
                server.start()
            except OSError as exc:  # e.g. .os not writable: search just stays with words
                if str(exc) not in failed:
                    failed.append(str(exc))
                    worker.log.warning("semantic_socket_failed", error=str(exc))
        if result.action == Step.PAUSED:  # a rebuild swaps memory.db in under us
            paused[0] = True
            return False
        if paused[0]:  # look for the new memory's missing vectors now, not at the next check
            paused[0] = False
            embedder.changed()
        if result.action == Step.CURATED:  # curation first: embed once the backlog is drained
            embedder.changed()
            return False
        return embedder.step() > 0

    worker.after_pass.append(after_pass)
    return server
