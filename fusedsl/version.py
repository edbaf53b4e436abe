"""The package version, in a module of its own so that any layer can read it without importing
the package (whose __init__ loads the frontend)."""
__version__ = "0.1.0"
