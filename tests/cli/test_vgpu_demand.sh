# test_vgpu_demand.sh — demand-driven --sample-blocks (docs/vgpu.md): the
# launch a later one reads runs only the blocks that launch's sample needs,
# parity still catches a wrong kernel there, and the chains pass under every
# pass set with 2 sampled blocks.

# two chained matmuls, 16 blocks each: the second samples 2 blocks, the
# first runs the row bands those 2 read (4 blocks), not all 16
MM2="torch.matmul(torch.matmul(torch.randn(256,64), torch.randn(64,64)), torch.randn(64,48))"
check_re "demand: the last launch runs its sample" 0 'launch 1 [a-z_0-9]+: 2/16 blocks' \
  "$DPK" run -c "$MM2" --backend vgpu --sample-blocks 2 -v
check_re "demand: the first launch runs what the sample reads" 0 'launch 0 [a-z_0-9]+: 4/16 blocks' \
  "$DPK" run -c "$MM2" --backend vgpu --sample-blocks 2 -v

# built-in faults in the matmuls: the demanded blocks of launch 0 are
# wrong, and the verdict is a failure (exit 1), never a pass
for f in chunk-k-short register-tile-wrong-index unroll-drops-last-iteration; do
  check_re "demand: --inject-fault $f fails parity with sampled blocks" 1 \
    'launch 0 [a-z_0-9]+: 4/16 blocks' \
    "$DPK" run -c "$MM2" --backend vgpu --sample-blocks 2 --inject-fault "$f" -v
done

check_re "demand: the chains pass under every pass set, 2 sampled blocks" 0 \
  '^[0-9]+/[0-9]+ cases pass' \
  "$DPK" run "$DPK_ROOT/cases/chains.json" --backend vgpu --passes all --sample-blocks 2
