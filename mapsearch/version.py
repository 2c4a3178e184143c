"""The version of mapsearch, in one place (the package root and ``mapsearch --version`` read it)."""

__version__ = "0.1.0"
