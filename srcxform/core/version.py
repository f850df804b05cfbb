"""srcxform's version: a leaf, so that modules inside the package (the code generator's
header) need not import the package's public face for it."""

__version__ = "0.1.0"
