"""The ``hf:`` backend's options (:class:`HFOptions`), light: the command line reads them without torch."""

from __future__ import annotations

from dataclasses import dataclass

from robusteval.config import validated
from robusteval.models.options import CommonOptions, backend_option

#: ``decoder``: see :meth:`robusteval.models.hf.HFBackend._static_engine`.
DECODERS = ("auto", "static", "dynamic")
#: ``step_compile``: how the static decode step is compiled (:mod:`robusteval.models.static_decode`).
COMPILE_MODES = ("auto", "off", "eager", "inductor", "reduce-overhead")


@validated
@dataclass(frozen=True)
class HFOptions(CommonOptions):
    """Loading and running a transformers causal LM (``hf:PATH_OR_HUB_ID``, ``hf:/path/model.gguf``)."""

    prefix_cache: bool = backend_option(True, help="reuse the KV cache of the prompt prefix shared by requests")
    decoder: str = backend_option(
        "auto", choices=DECODERS, replaces="--decoder",
        help="auto = a static KV cache with a compiled CUDA-graph step on a GPU where the model allows it "
        "(compiled once at load), the dynamic cache elsewhere; dynamic = never compile")
    step_compile: str = backend_option("auto", choices=COMPILE_MODES, help="how a static decode step is compiled")
    revision: str | None = backend_option(
        None, from_pretrained=True, help="from_pretrained: the hub revision (recorded in the run identity)")
    trust_remote_code: bool | None = backend_option(
        None, from_pretrained=True, help="from_pretrained: run the model repository's own code")
    attn_implementation: str | None = backend_option(
        None, from_pretrained=True, help="from_pretrained: sdpa, eager, flash_attention_2, ...")
    device_map: str | int | None = backend_option(
        None, from_pretrained=True, help="from_pretrained: auto, cuda:0, ... (accelerate places the model)")
    low_cpu_mem_usage: bool | None = backend_option(
        None, from_pretrained=True, help="from_pretrained: load the weights without a full copy in memory")
