"""Benchmarks (`citerag bench*`): retrieval quality, the agent end to end, and the search handler against local
doubles. Entry points like the CLI; not shipped to Lambda."""
