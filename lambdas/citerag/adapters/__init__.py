"""Adapters: the only code that talks to the outside world (boto3, Pinecone, SQLite, the embedded model). Each
implements a port of the cores; citerag.components picks and builds them from Settings."""
