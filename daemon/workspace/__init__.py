"""Workspace consistency: the watcher (file index and files.md's inventory), canvas card
mirroring, and the deterministic checks that queue pending actions."""
