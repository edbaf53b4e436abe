"""The tile IR: a tile's compute (`ir.py`, its text form `text.py`, its verifier `verify.py`, the
passes that allocate it `pipeline.py`) and a whole kernel (`kernel.py`, the passes every kind's
kernel runs `kernel_passes.py`).  Nothing is imported here: `fusedsl.lower.vector`
imports `tile.ir`, and the passes import the schedule's helpers, so each module is
imported by name."""
