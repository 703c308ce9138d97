"""Memory that moves: ``wsd import`` from the tools people use today, ``wsd export`` in
formats others read.

Import (:mod:`.importer`) reads one of five formats, told by ``--from`` or recognised by
itself (:mod:`.detect`): our own export and learnings lines (:mod:`.wsd_format`), the MCP
reference memory server's ``memory.jsonl`` (:mod:`.mcp_memory`), a Claude Code auto-memory
folder or plain Markdown (:mod:`.claude_code`) and claude-mem's database
(:mod:`.claude_mem`). Each turns its source into the same records
(:class:`wsd.daemon.store.transfer.Incoming`): every text through the capture hooks'
redaction, dated where the source has a date, naming its source in ``ref``. The store writes
them in one transaction: a bad line or row anywhere imports nothing from that file.

Export (:mod:`.exporter`) reads one consistent snapshot and writes our JSON lines (lossless:
``wsd import`` of it gives the same memory) or Claude Code's auto-memory layout
(:mod:`.markdown`).
"""
