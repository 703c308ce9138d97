"""What every job of the daemon runs on: config, logging, signals and threads, safe file
writes, the heartbeat file. Imports nothing of the jobs."""
