"""flashband's exceptions.

Every error the C++ library raises (``flashband::Error``) reaches Python as one of these
classes, chosen by its error code, with the C++ message unchanged (it names the argument,
the value and what is allowed). All derive from :class:`FlashbandError`; the two that callers
most often handle also derive from the built-in they mean, so generic code keeps working:

==========================  =====================  ======================================
class                       also a                 raised for
==========================  =====================  ======================================
``InvalidArgumentError``    ``ValueError``         a shape, dtype, value or pointer the
                                                   contract forbids (``kInvalidArgument``)
``UnsupportedError``        ``NotImplementedError`` valid input the chosen backend, or
                                                   every backend, cannot run (``kUnsupported``)
``NotBuiltError``           ``UnsupportedError``   a kernel this build does not contain
``CudaError``               ``RuntimeError``       a CUDA or cuDNN call failed
``InternalError``           ``RuntimeError``       a bug in flashband
==========================  =====================  ======================================
"""

__all__ = [
    "FlashbandError",
    "InvalidArgumentError",
    "UnsupportedError",
    "NotBuiltError",
    "CudaError",
    "InternalError",
]


class FlashbandError(Exception):
    """Base class of every flashband error. ``code`` is the C++ ErrorCode's name."""

    code = "error"


class InvalidArgumentError(FlashbandError, ValueError):
    code = "invalid_argument"


class UnsupportedError(FlashbandError, NotImplementedError):
    code = "unsupported"


class NotBuiltError(UnsupportedError):
    code = "not_built"


class CudaError(FlashbandError, RuntimeError):
    code = "cuda_error"


class InternalError(FlashbandError, RuntimeError):
    code = "internal"
