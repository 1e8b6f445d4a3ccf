"""The layout's rules, checked on every import in the package (module level and inside functions alike):
imports only point down the layers, the cores never touch an AWS or agent SDK, nothing shipped imports the test
doubles, the CDK app reads only the citation core, and the Lambda bundle leaves out benches and the CLI."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "lambdas" / "citerag"

# Lower numbers sit lower. A module may import its own folder and anything strictly below it.
LAYER = {
    "errors": 0, "extras": 0, "jsonfiles": 0.5, "rules": 0.5,
    "documents": 1,
    "search": 2,
    "ingestion": 3, "citations": 3,  # the two cores: each imports the search core, neither the other
    "answerer": 3.5,  # the offline answerer: a stand-in for a model over the citation core
    "adapters": 4,
    "traces": 5,
    "runtimes": 6,
    "settings": 7,
    "components": 8,
    "testing": 8.5,  # doubles: imported only by tests, benches and the CLI (rule below)
    "handlers": 9,
    "agentcore_app": 9,  # the AgentCore Runtime entry point (BedrockAgentCoreApp)
    "answerers": 9.5,  # the one face ask, chat, serve, MCP and the benches call
    "mcp_server": 9.6,  # `citerag mcp`: the MCP server over the embedded index
    "mcp_stdio": 9,  # `citerag mcp` over stdio: every line checked, a malformed one answered
    "bench": 10,
    "cli": 11,
    "command": 12,  # the `citerag` entry point: the CLI, or a line naming the extra it needs
}
ENTRY_POINTS = ("handlers", "cli", "bench", "command")  # what may import a Lambda handler module
CORES = ("documents", "search", "ingestion", "citations")
SDKS = ("boto3", "botocore", "pinecone", "strands", "bedrock_agentcore", "mcp", "aws_lambda_powertools", "openai")


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        top = rel.parts[0].removesuffix(".py")
        if top == "__init__":
            continue
        yield path, top


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
            if node.module == "citerag":  # from citerag import aws
                names.extend(f"citerag.{a.name}" for a in node.names)
    return names


def test_every_package_module_has_a_layer():
    assert {top for _, top in _modules()} <= set(LAYER)


@pytest.mark.parametrize(("path", "top"), list(_modules()), ids=lambda v: str(v.relative_to(PACKAGE))
                         if isinstance(v, Path) else "")
def test_imports_only_point_down(path, top):
    upward = []
    for name in _imports(path):
        parts = name.split(".")
        if parts[0] != "citerag" or len(parts) < 2 or parts[1] == top:
            continue
        target = parts[1]
        if LAYER[target] >= LAYER[top]:
            upward.append(name)
    assert not upward, f"{path.relative_to(ROOT)} imports upward or sideways: {upward}"


def test_cores_never_import_an_sdk():
    offenders = {str(p.relative_to(ROOT)): [n for n in _imports(p) if n.split(".")[0] in SDKS]
                 for p, top in _modules() if top in CORES}
    assert not {k: v for k, v in offenders.items() if v}


def test_nothing_shipped_imports_the_test_doubles():
    offenders = [str(p.relative_to(ROOT)) for p, top in _modules() if top not in ("testing", "bench", "cli")
                 and any(n.startswith("citerag.testing") for n in _imports(p))]
    assert not offenders


def test_only_entry_points_import_the_lambda_handlers():
    """A handler is an entry point: the local agent, the answerers and the servers reach the action group and the
    parser through the runtimes, never through a handler and its Powertools logging and metrics."""
    offenders = {str(p.relative_to(ROOT)): [n for n in _imports(p) if n == "citerag.handlers"
                                            or n.startswith("citerag.handlers.")]
                 for p, top in _modules() if top not in ENTRY_POINTS}
    assert not {k: v for k, v in offenders.items() if v}


def test_the_cdk_app_reads_only_the_citation_core():
    for path in (ROOT / "infra").glob("*.py"):
        used = {n.split(".")[1] for n in _imports(path) if n.startswith("citerag.")}
        assert used <= {"citations"}, f"{path.name} imports {used}"


def test_the_lambda_bundle_leaves_out_benches_cli_samples_and_doubles():
    from infra.bundling import NOT_IN_LAMBDA

    assert {"citerag/bench", "citerag/cli", "citerag/testing", "citerag/samples"} <= set(NOT_IN_LAMBDA)
