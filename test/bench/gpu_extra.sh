#!/usr/bin/env bash
# Packs the npm packages test/bench/gpu_session.sh needs that ../shared/tools/gpu-bundle.sh does
# not carry (protobufjs, which src/io/tfevents.ts imports, and its @protobufjs helpers: on
# 2026-11-27 the first bench call on the GPU machine failed at that import) into
# .gpu/extra.tar.xz, which gpu_session.sh unpacks into node_modules before its first step.
# Run here, after gpu-bundle.sh, from the repository root; carry [".gpu", ".gl"] as it says.
set -euo pipefail
pkgs=(protobufjs @protobufjs)
for p in "${pkgs[@]}"; do
  [ -e "node_modules/$p" ] || { echo "gpu_extra: node_modules/$p is missing: run npm install" >&2; exit 1; }
done
mkdir -p .gpu
tar -C node_modules -cJf .gpu/extra.tar.xz "${pkgs[@]}"
echo "gpu_extra: .gpu/extra.tar.xz ($(du -k .gpu/extra.tar.xz | cut -f1) KiB: ${pkgs[*]})"
