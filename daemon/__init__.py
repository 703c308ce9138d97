"""The Workspace Daemon: the supervised process that curates captured turns into memory."""
