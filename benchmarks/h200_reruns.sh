#!/usr/bin/env bash
# Re-measure the two reference families on a GPU host and write the bundles of benchmarks/results/.
#
#   LIGER_CSV=path/to/all_benchmark_data.csv OUT_DIR=benchmarks/results bash benchmarks/h200_reruns.sh [PART...]
#
# PART is any of fna-reference fna-sweep fna-passes mta-sweep mta-passes (default: all), or
# reference-rounds: the reference workloads again, twice, each round a fresh process; fair: the
# reference workloads of both families under policy v2 with every comparator, TF32 variants, the
# host-inclusive figure and the host-synchronization check (issue 17); families: the newest upstream
# rows' largest workload of each pass of the formulated families (issue 20), on the GPU upstream used
# for most of them (the H100 where there are H100 rows); families-full: the full pass of every other
# family the same way (issue 20); families-rest: those families-full did not reach; losses: the full
# pass of each loss family at a middle workload of its newest rows (issue 21; on CUDA every part also
# records each implementation's peak memory, linked to upstream's memory rows, which are full-pass
# rows); part2: the other part-2 families the same way (PART2_ROWS_ONLY picks some of them); memory: peak
# memory alone (--metric memory) of one row of each part-1 and reference family (MEMORY_ROWS_ONLY picks some of
# them; the two multi-token attentions' rows always run, and mta-memory runs them alone). Each part
# appends to its own JSON-lines bundle; `flask import kernelindex` loads them on the server. The run
# ids below are the upstream rows these reruns reproduce (ids are digests, the same on every host
# that imported the same CSV): H100 rows of fused neighborhood attention (batch 2, hidden 512,
# heads 8, kernel 7) and RTX 3090 rows of multi-token attention (B 2, C_in 4, C_out 4, K 3).
set -euo pipefail
: "${LIGER_CSV:?set LIGER_CSV to the path of all_benchmark_data.csv}"
OUT_DIR=${OUT_DIR:-benchmarks/results}
export KERNELINDEX_DATABASE_URL=${KERNELINDEX_DATABASE_URL:-sqlite:////tmp/kernelindex-rerun-host.sqlite3}
mkdir -p "$OUT_DIR"
# A measuring host serves nothing: a throwaway secret and address satisfy the app's start-up checks.
export KERNELINDEX_SECRET_KEY=${KERNELINDEX_SECRET_KEY:-$(python3 -c 'import secrets; print(secrets.token_urlsafe(32))')}
export KERNELINDEX_PUBLIC_URL=${KERNELINDEX_PUBLIC_URL:-http://localhost}
flask() { python3 -m flask --app wsgi "$@"; }
flask db upgrade
flask import liger "$LIGER_CSV"

FNA_REFERENCE=073f839b831b                      # forward, seq 1024, dilation 2 (the reference page)
FNA_FORWARD_SWEEP="f26da81a14d2 509945c80547 5f8eefa8fd6d 2e08e7ebd018 eb00a0ef6b04 641f59cd8aeb bac10a8f34f3
                   48a97d29658f 4647f81755dd 8e22e3a22b38 8a69b36636c5 b5382b10d1be c15e76817a28"
FNA_OTHER_PASSES="9c2c3b7b8fe0 8bc9ef4bd778"    # backward and full at the reference workload
MTA_REFERENCE=0421ba5aea66                      # forward, L 1024
MTA_FORWARD_SWEEP="43ca16c743ce 80398a2ab244 f57cfac5f4e2 12fb0610da1a ce83d9559679"
MTA_BACKWARD=103a829f91b7
MTA_FULL=c17a988f2221
MTA_OTHER_PASSES="$MTA_BACKWARD $MTA_FULL"      # backward and full at L 1024
FAMILY_ROWS="859077a208e6 5b5155b39c6c 09070c26d96b   ff22f3f38239 ada83d362592 f373547a08cf   cd3051e8b9b6
             687f4a376c73 cac733408f54 f1a56368c498   c119c64d4c76 b6a2682c9860"  # rms_norm layer_norm swiglu geglu softmax
# The full pass (forward and backward) of every other family at its newest rows' largest workload; dyt,
# poly_norm and group_norm's rows are B200 rows of the cuTile CSV (LIGER_CSV names a folder holding both).
FAMILY_FULL_ROWS="f1a56368c498 b6a2682c9860 32ab57cc8a79 eaae086e78f6 575857afa817 5f77b1ce0f0e d6889df66d8e
                  963e913e309b 6aecd452f6f7 a04a6798df9f 95b47f304073"
# The families the first two calls did not reach: dyt and poly_norm (B200 rows of the cuTile CSV), and
# llama4_rope (H100 rows) and qwen2vl_mrope (B200 rows of the cuTile CSV), full pass at the largest workload.
FAMILY_REST_ROWS="a04a6798df9f 95b47f304073 242923cf45b3 8a2168bccf8e"
# cross_entropy, kl_div and tvd at V 32768 (B 8, T 2048), jsd at BT 2048 (V 128256), fused linear cross-entropy
# at BT 8192 and fused linear JSD at BT 2048 (H 4096, V 128256): the largest rows would allocate every
# implementation's 8 GB inputs and their float64 reference at once.
LOSS_ROWS="c584f47d26e3 b1d276c49f42 64d5cc9580aa b8e18b3f4998 bf26764cc91f eb41c40c3488"
# The other part-2 families (issue 21), full pass, each at a small or middle workload of its newest rows in the
# main CSV (whose rows name Liger's Triton kernels `liger`; fused_moe at 8 experts: upstream's Hugging Face loop
# over 128 experts takes 250 ms a call), cheapest first; PART2_ROWS_ONLY picks some of them.
PART2_ROWS="31bf40c5611d 4b49237d6ad9 2904e7fac743 fb2684c033c4 e6f24231d949 249c7c9b1941 011e2186a5f3
            686a389851b7 87a38dd86d8b d056aa28f1a1 7b9dcb3b3633 edd1eeaf1dae 9324c5ab24ac a60fae7d6cfb
            75e337a76647 b56e6c77425d"
# Memory only (no timing, so no torch_compile: its compile would take most of the call), one row of each part-1
# and reference family at a pass upstream has memory rows for; both multi-token attentions without Liger, whose
# kernels do not compile within the time budget (see mta_long).
MEMORY_ROWS="09070c26d96b f373547a08cf cd3051e8b9b6 f1a56368c498 b6a2682c9860 32ab57cc8a79 eaae086e78f6
             575857afa817 d6889df66d8e 963e913e309b 6aecd452f6f7 a04a6798df9f 95b47f304073
             242923cf45b3 8a2168bccf8e 8bc9ef4bd778"
SPARSE_MTA_FULL=5f77b1ce0f0e
FAST="--implementation liger --implementation liger+tf32 --implementation kernelindex_triton"
MTA_IMPLS="--implementation torch --implementation kernelindex_triton"

# Liger-Kernel's multi-token attention kernels do not finish compiling at L 1024 within 500 s on an
# H200 and refuse L 2048, so the mta parts leave them out (benchmarks/README.md).
mta_long() { flask rerun $MTA_REFERENCE $MTA_IMPLS --param seq=2048 --param seq=4096 --out "$1"; }

run_part() {
  case $1 in
    fna-reference) flask rerun $FNA_REFERENCE --out "$OUT_DIR/h200-fna-forward-reference.jsonl" ;;
    fna-sweep)     flask rerun $FNA_FORWARD_SWEEP $FAST --out "$OUT_DIR/h200-fna-forward-sweep.jsonl" ;;
    fna-passes)    flask rerun $FNA_OTHER_PASSES --out "$OUT_DIR/h200-fna-backward-full.jsonl" ;;
    mta-sweep)     flask rerun $MTA_REFERENCE $MTA_FORWARD_SWEEP $MTA_IMPLS --out "$OUT_DIR/h200-mta-forward-sweep.jsonl"
                   mta_long "$OUT_DIR/h200-mta-forward-long.jsonl"
                   flask rerun $MTA_REFERENCE --implementation torch_compile --out "$OUT_DIR/h200-mta-forward-sweep.jsonl" ;;
    mta-passes)    flask rerun $MTA_OTHER_PASSES $MTA_IMPLS --out "$OUT_DIR/h200-mta-backward-full.jsonl" ;;
    reference-rounds)
                   for round in 1 2; do
                     flask rerun $FNA_REFERENCE $FAST --out "$OUT_DIR/h200-round$round-fna-forward-reference.jsonl"
                     flask rerun $MTA_REFERENCE $MTA_IMPLS --out "$OUT_DIR/h200-round$round-mta-forward-reference.jsonl"
                     mta_long "$OUT_DIR/h200-round$round-mta-forward-long.jsonl"
                   done ;;
    fair)          flask rerun $FNA_REFERENCE --out "$OUT_DIR/h200-fair-fna-forward-reference.jsonl"
                   flask rerun $FNA_OTHER_PASSES --out "$OUT_DIR/h200-fair-fna-backward-full.jsonl"
                   flask rerun $MTA_REFERENCE $MTA_OTHER_PASSES $MTA_IMPLS --implementation torch_compile \
                     --out "$OUT_DIR/h200-fair-mta-reference.jsonl" ;;
    families)      flask rerun $FAMILY_ROWS --out "$OUT_DIR/h200-families.jsonl" ;;
    families-full) flask rerun $FAMILY_FULL_ROWS --out "$OUT_DIR/h200-families-full.jsonl" ;;
    families-rest) flask rerun $FAMILY_REST_ROWS --out "$OUT_DIR/h200-families-rest.jsonl" ;;
    losses)        flask rerun $LOSS_ROWS --out "$OUT_DIR/h200-losses.jsonl" ;;
    part2)         flask rerun ${PART2_ROWS_ONLY:-$PART2_ROWS} --out "$OUT_DIR/h200-part2.jsonl" ;;
    memory)        flask rerun ${MEMORY_ROWS_ONLY:-$MEMORY_ROWS} --metric memory --without torch_compile --out "$OUT_DIR/h200-memory.jsonl"
                   run_part mta-memory ;;
    mta-memory)    flask rerun $MTA_FULL $SPARSE_MTA_FULL --metric memory --without torch_compile --without liger \
                     --out "$OUT_DIR/h200-memory.jsonl" ;;
    *) echo "unknown part $1" >&2; return 2 ;;
  esac
}

for part in ${@:-fna-reference fna-sweep fna-passes mta-sweep mta-passes}; do
  echo "== $part" >&2
  run_part "$part" || echo "== $part failed; going on with the next part" >&2
done
