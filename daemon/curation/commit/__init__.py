"""Committing a judged batch: its ledger record and the exactly-once point (one memory.db
transaction for the ledger row, learnings, actions and md revisions; turns covered already
are refused)."""
