#!/usr/bin/env python3
"""One rank of a torch.distributed (gloo) job annotated through libdptrace.

  torch_coll.py LIBDPTRACE PORT SLOW_RANK STEPS

RANK and WORLD_SIZE come from the environment, as torchrun sets them.  Two
phases of STEPS steps each: steps 0.. with SLOW_RANK sleeping 20 ms before
its allreduce, steps 1000.. with no slow rank.  Each step is
dpt_step_begin/end around a "forward" range (a matmul) and an "allreduce"
range around dist.all_reduce.  Exit 0 when done.
"""
import ctypes
import os
import sys
import time

import torch
import torch.distributed as dist


def main():
    lib = ctypes.CDLL(sys.argv[1])
    lib.dpt_step_begin.argtypes = [ctypes.c_uint64]
    lib.dpt_range_push.argtypes = [ctypes.c_char_p]
    port, slow, steps = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            init_method=f"tcp://127.0.0.1:{port}")
    x = torch.randn(128, 128)
    t = torch.ones(1 << 14)
    for late, first in ((slow, 0), (-1, 1000)):
        dist.barrier()
        for s in range(steps):
            lib.dpt_step_begin(first + s)
            lib.dpt_range_push(b"forward")
            x = torch.tanh(x @ x)
            lib.dpt_range_pop()
            if rank == late:
                time.sleep(0.02)
            lib.dpt_range_push(b"allreduce")
            dist.all_reduce(t)
            lib.dpt_range_pop()
            lib.dpt_step_end()
    dist.barrier()
    dist.destroy_process_group()
    print(f"rank {rank}: {2 * steps} steps done", flush=True)
    # Give the library's sender a moment to hand over its last batches.
    time.sleep(1.0)


if __name__ == "__main__":
    main()
