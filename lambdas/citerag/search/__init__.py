"""Retrieval core, search: the one passage type, query analysis, BM25 sparse vectors, the Pinecone filter
language, fusion, relevance grading, parent expansion, packing into a byte budget, circuit breakers, and the
ports (Embedder, VectorIndex, Reranker) that adapters implement. Never imports boto3, pinecone or an adapter."""
