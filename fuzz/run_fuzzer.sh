#!/usr/bin/env bash
# Runs one libFuzzer binary for a bounded time over a scratch copy of its seed
# corpus. Usage: run_fuzzer.sh <fuzzer> <seed-dir> <work-dir> <seconds> [libFuzzer flags...]
# Exit status is the fuzzer's: non-zero on a finding (crash-*/leak-* land in <work-dir>).
set -euo pipefail
fuzzer=$1 seeds=$2 work=$3 seconds=$4
shift 4
rm -rf "$work/corpus"
mkdir -p "$work/corpus" "$work/artifacts"
cp "$seeds"/* "$work/corpus/" 2>/dev/null || true
exec "$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/" "$@" "$work/corpus" "$seeds"
