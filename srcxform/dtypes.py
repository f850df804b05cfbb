"""`srcxform.dtypes`: tf.dtypes's names for NumPy's dtypes (srcxform/core/dtypes.py)."""

from srcxform.core.dtypes import *  # its __all__: the public names
from srcxform.core.dtypes import __all__  # noqa: F401
