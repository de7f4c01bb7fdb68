#!/usr/bin/env bash
# Runs the libFuzzer target for a while (docs/fuzzing.md).
#
#   run_fuzz.sh FUZZ_BIN PYTHON WORKDIR SECONDS [libFuzzer options...]
#
# Collects the seeds into WORKDIR/seeds (once; tests/fuzz/make_seeds.py),
# keeps the inputs that add coverage in WORKDIR/corpus (reused by later runs)
# and writes any crash, leak or timeout into WORKDIR/artifacts/. Exits
# non-zero when libFuzzer reports one: replay it with
#   fuzz_replay WORKDIR/artifacts/<file>
# and once fixed, keep it in tests/fuzz/regressions/ (fuzz.replay runs those).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="$1" py="$2" work="$3" secs="$4"
shift 4
mkdir -p "$work/corpus" "$work/artifacts"
# ONNXC_FUZZ_SEED_OPTS: make_seeds.py options (the seeds are made again when they change).
opts="${ONNXC_FUZZ_SEED_OPTS:-}"
if [ "$(cat "$work/seeds/.complete" 2>/dev/null || echo none)" != "opts:$opts" ]; then
  rm -rf "$work/seeds"
  "$py" "$here/make_seeds.py" "$work/seeds" $opts
  echo "opts:$opts" > "$work/seeds/.complete"
fi
# -timeout: an input over 10 s is a bug; -rss_limit_mb: so is one needing
# 2 GiB (the frontend refuses tensors it cannot hold with an error).
exec "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
  -dict="$here/onnx.dict" -print_final_stats=1 -artifact_prefix="$work/artifacts/" \
  "$@" "$work/corpus" "$work/seeds"
