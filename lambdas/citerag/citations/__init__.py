"""Citation core, shared by every runtime: the agent's tool definition, the search tool (access filter, budgeted
response, signed source ids), the search response payload, prompt templates, output parsing, id verification,
graders, PII masking, sentence selection, the chat-model port and the Answer type."""
