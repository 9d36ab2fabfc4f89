"""robusteval: measure how robust large language models really are."""

__version__ = "0.1.0"
