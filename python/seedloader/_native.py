"""seedloader's own data sets as the package exports them: the engine's classes
(seedloader._core), each made picklable by the arguments it was built with, so
that a fleet's actor (seedloader.ray) opens the same data set from the same
path or URL on its own machine.
"""
from seedloader import _core


def _picklable(base):
    """`base` with its constructor's arguments kept, and pickled as them."""

    class Native(base):
        __doc__ = base.__doc__

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._arguments = (args, kwargs)

        def __reduce__(self):
            return (_reopen, (type(self).__name__,) + self._arguments)

    Native.__name__ = Native.__qualname__ = base.__name__
    Native.__module__ = "seedloader"
    return Native


def _reopen(name, args, kwargs):
    return globals()[name](*args, **kwargs)


Cifar10 = _picklable(_core.Cifar10)
ImageFolder = _picklable(_core.ImageFolder)
Mnist = _picklable(_core.Mnist)
Synthetic = _picklable(_core.Synthetic)
TarShards = _picklable(_core.TarShards)
TensorFile = _picklable(_core.TensorFile)
