"""The AgentCore runtime: the code-defined agent (Strands), its wire contract, and the InvokeAgentRuntime client."""
