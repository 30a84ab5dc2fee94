#!/usr/bin/env bash
# Compiler launcher of the GPU kernels' translation units (gpu/CMakeLists.txt): runs the compile
# it is given, passes its output on, and fails it when ptxas reports that it serialized wgmma
# ("Potential Performance Loss: wgmma.mma_async instructions are serialized ...", C7510-C7520).
# Such a kernel is correct but runs its GEMMs one at a time, so the build stops instead of shipping
# it (docs/gpu-performance.md, "Design decisions", on the forms that answer it).
out=$(mktemp) && err=$(mktemp) || exit 1
"$@" >"$out" 2>"$err"
rc=$?
cat "$out"
cat "$err" >&2
if [ "$rc" -eq 0 ] && grep -q "wgmma.mma_async instructions are serialized" "$err" "$out"; then
  echo "error: ptxas serialized wgmma in this translation unit (the ptxas info lines above name" \
    "the kernels and the cause); configure with -DTILESCHED_GPU_WGMMA_GUARD=OFF to build it anyway" >&2
  rc=1
fi
rm -f "$out" "$err"
exit "$rc"
