#!/usr/bin/env bash
# One GPU lease's checks and measurements, prepared so that a session with a GPU machine spends
# its device time in one or two calls (docs/benchmarks.md, "A GPU session"). Run from the repo
# root on the device, after unpacking ../shared/tools/gpu-bundle.sh's folders (and with
# test/bench/gpu_extra.sh's .gpu/extra.tar.xz, which this unpacks):
#   test/bench/gpu_session.sh OUTDIR [STEPS] [--quick]
# STEPS: comma-separated (default: adapter,scale,scalehalf,rl,rlsplit,golden,classes: the
# measurements first, so a call cut off at its limit loses re-run tests, not figures), run in
# this order (scalehalf right after scale):
#   adapter  the adapter's description and limits
#   golden   the transformers + peft goldens of the micro models again with the device's versions
#            (test/fixtures/hf_golden.py), then test/model/hf_golden_test.ts against them and
#            test/model/real_shape_test.ts (the GPU forward at SmolLM2-135M's size) (needs
#            python3 with torch, transformers, peft; the committed ones come from the CPU machine)
#   classes  the suites whose kernels and picks depend on the adapter class: test/ops, test/gpu
#   scale    deno task bench --only scale --profile --long-context 2048 (real model sizes beside
#            PyTorch; decode after 2048-token prompts with the attention split over positions and
#            without), one process per shape (scale_<shape>.out / .err)
#   rl       deno task bench --only rl (an AT-GRPO step beside bare generation)
#   rlsplit  the same with PETTINGLLMS_LORA_FORWARD=split: the LoRA forward as two dispatches a
#            module, against rl's fused one (lora_fused.wgsl) on the same machine
#   labmodel deno task bench --only matmul --lab --model-shapes: Qwen2.5-0.5B's training and
#            prefill GEMMs (1024 / 512 rows, the LM head), the workgroup-memory tiles (sm*) beside
#            the register tiles the GPU picks name today; a few minutes (not in the default)
#   scalepicks  after labmodel: the scale bench of qwen2.5-0.5b again with labmodel's picks laid
#            over the tables (PETTINGLLMS_MATMUL_PICKS), so one lease measures what the new picks
#            do to a whole model before they go into src/ops/tuning.ts (not in the default)
#   tune     deno task tune at Qwen2.5-0.5B's products at the scale bench's sizes (decode at 1,
#            8, 32 rows, prefill of 64-token prompts, a LoRA step's 1024 rows): every matmul
#            variant timed on this device, the fastest per bucket, the sampler's row split
#            at its 151,936-word vocabulary (src/model/sampler_tune.ts), the fused LoRA
#            forward's column split (src/model/lora_tune.ts), decode attention's split over
#            a 2048-position cache (src/model/attention_tune.ts) and the loss heads' lanes a row
#            (src/train/loss_tune.ts), written to OUTDIR's picks.json
#            (src/ops/autotune.ts); ~1-2 minutes (not in the default)
#   scaletuned  after tune: the scale bench of qwen2.5-0.5b with those picks
#            (PETTINGLLMS_TUNED_PICKS), against scale's built-in picks (not in the default)
#   scalehalf  the scale bench of qwen2.5-0.5b with --half-base (the frozen base in half floats:
#            decode, prefill and the LoRA step), to set beside scale's f32 figures; ~80 s
#   labhalf  deno task bench --only matmul --lab --half --model-shapes: the GPU picks' kernels
#            and their half-B twins (weights as half floats, src/ops/matmul_half.ts) at
#            Qwen2.5-0.5B's decode (1, 8, 32 rows), prefill and training GEMMs: what a half-float
#            frozen base would gain, kernel by kernel; ~3 minutes (not in the default)
#   lab      deno task bench --only matmul --lab: every matmul variant timed per shape, split-K
#            decode kernels included; its "picks" go into src/ops/tuning.ts (not in the default)
# Each step has its own time limit and writes <step>.out and .err; session.log says when each
# began and ended and its exit status. The device tool brings back at most 8 files, so they are
# written to a work folder and packed into OUTDIR/session.tgz after every step (a call cut off by
# its time limit keeps the steps before). --quick: the scale bench's reduced shape.
set -uo pipefail
out=${1:?usage: test/bench/gpu_session.sh OUTDIR [STEPS] [--quick]}
steps=${2:-adapter,scale,scalehalf,rl,rlsplit,golden,classes}
quick=""
for a in "$@"; do [ "$a" = "--quick" ] && quick="--quick"; done
[ "$steps" = "--quick" ] && steps=adapter,scale,scalehalf,rl,rlsplit,golden,classes
mkdir -p "$out"
# What gpu-bundle.sh does not carry (test/bench/gpu_extra.sh packs it here).
if [ -f .gpu/extra.tar.xz ]; then
  xz -dc .gpu/extra.tar.xz | tar -x -C node_modules
fi
[ -e node_modules/protobufjs ] ||
  echo "[gpu-session] node_modules/protobufjs is missing: run test/bench/gpu_extra.sh before the call" >&2
final=$out
out=$(mktemp -d)
D=./node_modules/deno/deno
export NO_COLOR=1

log() { echo "[gpu-session $(date -u +%H:%M:%S)] $*" | tee -a "$out/session.log" >&2; }
want() { [[ ",$steps," == *",$1,"* ]]; }
# step NAME SECONDS CMD...: runs CMD with a time limit, stdout and stderr to OUTDIR/NAME.{out,err}.
step() {
  local name=$1 limit=$2
  shift 2
  log "begin $name (limit ${limit}s): $*"
  local t0=$SECONDS
  timeout "$limit" "$@" >"$out/$name.out" 2>"$out/$name.err"
  local rc=$?
  log "end $name: exit $rc after $((SECONDS - t0))s"
  tar -czf "$final/session.tgz" -C "$out" .
  return 0
}

if want adapter; then
  step adapter 60 $D eval 'import { Gpu } from "./src/gpu/mod.ts";
const g = await Gpu.create();
console.log(g.describe());
console.log(JSON.stringify({ class: g.adapterClass, features: [...g.device.features],
  limits: Object.fromEntries(["maxStorageBufferBindingSize", "maxBufferSize",
    "maxComputeWorkgroupStorageSize", "maxComputeInvocationsPerWorkgroup"]
    .map((k) => [k, (g.device.limits as unknown as Record<string, number>)[k]])) }));
g.destroy();'
fi
if want scale; then
  # One process per shape: a shape cut off by its limit loses only its own JSON (the bench
  # prints it at the end; progress lines go to the .err as they come).
  if [ -n "$quick" ]; then
    step scale 300 $D task bench --only scale --profile --quick --long-context 160
  else
    for shape in smollm2-135m qwen2.5-0.5b qwen3-0.6b; do
      step "scale_$shape" 200 $D task bench --only scale --shapes "$shape" --profile \
        --long-context 2048
    done
  fi
fi
if want scalehalf; then
  shape=qwen2.5-0.5b
  [ -n "$quick" ] && shape=qwen2.5-reduced
  step "scalehalf_$shape" 200 $D task bench --only scale --shapes $shape --half-base --profile $quick
fi
if want rl; then
  step rl 300 $D task bench --only rl $quick
fi
if want rlsplit; then
  export PETTINGLLMS_LORA_FORWARD=split
  step rlsplit 300 $D task bench --only rl $quick
  unset PETTINGLLMS_LORA_FORWARD
fi
if want golden; then
  step golden_py 120 python3 test/fixtures/hf_golden.py
  for m in llama qwen2 qwen3 gpt2; do
    cp test/fixtures/micro-$m/hf_logits.json "$out/hf_logits.$m.json" 2>/dev/null
  done
  step golden_test 240 $D test -A test/model/hf_golden_test.ts test/model/real_shape_test.ts
fi
if want classes; then
  step classes 300 $D test -A --unstable-worker-options test/ops test/gpu
fi
if want labmodel; then
  step labmodel 300 $D task bench --only matmul --lab --model-shapes \
    --variants '^sm|^r8c8_wg8x4$|^r8c4_wg16x1$|^r16c8_wg16x1$|^r4c4_wg16x1$|^r1c4_wg64x1$' $quick
fi
if want scalepicks; then
  picks=$($D eval "const t = Deno.readTextFileSync('$out/labmodel.out').trim().split('\\n').at(-1);
console.log(JSON.stringify(JSON.parse(t).matmul.lab.picks))" 2>>"$out/session.log")
  if [ -n "$picks" ]; then
    log "scalepicks: PETTINGLLMS_MATMUL_PICKS=$picks"
    export PETTINGLLMS_MATMUL_PICKS="$picks"
    shape=qwen2.5-0.5b
    [ -n "$quick" ] && shape=qwen2.5-reduced
    step "scalepicks_$shape" 200 $D task bench --only scale --shapes $shape --profile $quick
    unset PETTINGLLMS_MATMUL_PICKS
  else
    log "scalepicks: no picks in labmodel.out (run labmodel first, in the same call)"
  fi
fi
if want tune; then
  m=test/fixtures/configs/qwen2.5-0.5b-instruct.json
  [ -n "$quick" ] && m=configs/models/reduced/qwen2.5-0.5b.json
  # The scale bench's sizes: decode at 1, 8, 32 rows, prefill 64-token prompts (chunks of up to
  # 512 rows), the LoRA step's 1024 rows.
  step tune 240 $D task tune --model $m --prefill-rows 64,512 --out "$out/picks.json" --json
fi
if want scaletuned; then
  if [ -f "$out/picks.json" ]; then
    export PETTINGLLMS_TUNED_PICKS="$out/picks.json"
    shape=qwen2.5-0.5b
    [ -n "$quick" ] && shape=qwen2.5-reduced
    step "scaletuned_$shape" 200 $D task bench --only scale --shapes $shape --profile $quick
    unset PETTINGLLMS_TUNED_PICKS
  else
    log "scaletuned: no picks.json (run tune first, in the same call)"
  fi
fi
if want labhalf; then
  step labhalf 300 $D task bench --only matmul --lab --half --model-shapes \
    --variants '^sk_|^r4c4_wg16x1$|^r8c4_wg16x1$|^r1c4_wg64x1$|^r8c8_wg8x4$|^sm64x64' $quick
fi
if want lab; then
  step lab 540 $D task bench --only matmul --lab $quick
fi
log "done: $(ls "$out" | tr '\n' ' ')"
tar -czf "$final/session.tgz" -C "$out" .
