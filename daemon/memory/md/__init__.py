"""The curated markdown files: on disk and in their revisions (:mod:`.files`), kept in step
by the loop (:mod:`.sync`: written after each commit, a person's edit adopted), and
files.md's two parts, the curator's notes and the watcher's inventory (:mod:`.files_md`)."""
