"""Retrieval core, ingestion: files or S3 notifications -> documents -> chunks -> vectors -> one atomic replace per
document; unchanged content is a no-op. Its ports (ObjectSource, DeadLetterSink) are implemented by adapters."""
