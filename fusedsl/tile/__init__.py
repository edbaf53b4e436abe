"""The tile IR (`ir.py`), its text form (`text.py`), its verifier (`verify.py`) and the
passes that allocate it (`passes.py`).  Nothing is imported here: `fusedsl.lower.vector`
imports `tile.ir`, and the passes import the schedule's helpers, so each module is
imported by name."""
