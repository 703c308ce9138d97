"""Turning captured turns into memory: the loop (worker), the batch pipeline shared with
rebuild, the curator contract (prompt, reply), the Bridge client with its retries, and the
loop's health (outage backoff, wake detection, memory shedding)."""
