"""`python -m fusedsl`: the command line (fusedsl/cli.py)."""
import sys

from .cli import main

if __name__ == "__main__":   # importing the module (API doc tools inspect every module) runs nothing
    sys.exit(main())
