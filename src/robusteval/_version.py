"""robusteval's version, in the lowest layer so every module can record it (``robusteval.__version__``)."""

__version__ = "0.2.0"
