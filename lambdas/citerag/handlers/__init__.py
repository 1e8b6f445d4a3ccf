"""Entry points for AWS Lambda: thin adapters from an event to the cores, each built from Components
(`build(components)`), with `handler` as the deployed entry point. `local` runs them in-process."""
