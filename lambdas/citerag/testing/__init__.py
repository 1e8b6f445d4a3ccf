"""Local stand-ins for remote services (Bedrock runtime, Pinecone), used by tests and handler benchmarks.

They speak the real wire protocols so that the real boto3 and Pinecone clients can be pointed at them.
Not part of the Lambda packages.
"""
