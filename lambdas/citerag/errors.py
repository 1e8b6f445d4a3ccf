"""Errors a user can act on. Each carries a message meant to be shown as is, without a traceback."""

from __future__ import annotations


class CiteragError(Exception):
    """Base class: the message is specific and safe to show to a user."""


class DocumentError(CiteragError):
    """A document could not be loaded (corrupt, encrypted, empty, unsupported...)."""


class NeedsOcr(DocumentError):
    """An image of text, not read because OCR is off: skipped, as a file of a type not indexed is."""


class IndexError_(CiteragError):
    """The index file is locked, corrupt, or otherwise unusable."""


class DiskFullError(IndexError_):
    """The disk is full: nothing more can be written until space is freed."""


class FilterSyntaxError(CiteragError):
    """A metadata filter is not valid Pinecone filter syntax."""


class QueryError(CiteragError):
    """A query is empty or otherwise unusable."""


class DependencyError(CiteragError):
    """An external dependency (embedding service, vector store, model) failed."""
