"""`srcxform.errors`: tf.errors's exceptions, and srcxform's own errors and warnings
(srcxform/core/errors.py)."""

from srcxform.core.errors import *  # its __all__: the public names
from srcxform.core.errors import __all__  # noqa: F401
