"""Retrieval core, documents: loaders (PDF per page, Markdown and HTML per section, text), sentence-aware chunking
for Japanese and English, and the document model. No I/O beyond the bytes it is given."""
