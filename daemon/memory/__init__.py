"""What the agent remembers and how it reaches it: the curated md files and their revisions,
files.md's two parts, the boot context, search_memory and the agent wiring (SDK helper and
MCP tools)."""
