"""Traces: InvokeAgent events and model-invocation logs -> one step view, saved trace files, and the answer with
its citations joined from a trace. Read by the CLI, the benches and the Classic client."""
