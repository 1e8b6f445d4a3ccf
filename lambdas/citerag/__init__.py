"""citerag: retrieval-augmented answers with verifiable citations."""

__version__ = "0.1.0"
