"""Record per-sample traces from PyTorch DataLoaders for `seed-audit trace`.

Kept for scripts that put tools/ on sys.path (`from torch_trace import trace`);
the code lives in python/seedloader/_trace.py, which is run here in this
module's own namespace: its classes then pickle as torch_trace.X, a name spawned
workers can import again. Usage and the trace format: that file's docstring.
"""
import importlib.util
import os
import sys

_IMPL = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "python",
                     "seedloader", "_trace.py")
importlib.util.spec_from_file_location(__name__, _IMPL).loader.exec_module(
    sys.modules[__name__])
