"""The offline answerer: a stand-in for a model that quotes sentences of the passages search found, each cited,
and refuses when the documents do not hold the fact. Every answer carries a `Decision` that names why."""
