"""Runtimes: where an agent turn runs. The local Classic runtime (the InvokeAgent sequence in-process), the Classic
client (InvokeAgent), and the embedded answerer (search + extractive answer, no agent)."""
