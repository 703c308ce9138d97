"""The operator's side: the ``wsd`` command line (which only wires), doctor, workspace
initialisation and deploy."""
