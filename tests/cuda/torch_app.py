"""torch_app: a small PyTorch training loop for libdptrace_cupti on a real GPU
(tests/integration/test_dptrace_torch_gpu.sh).  A 3-layer MLP, SGD, one
step per dpt_step_begin/end with ranges "forward", "backward", "optimizer"
through the library's C API (ctypes) when CUDA_INJECTION64_PATH names it.

Usage: python3 torch_app.py [STEPS]
Prints the median step time; exit status 3 when CUDA cannot be used.
"""
import ctypes
import os
import statistics
import sys
import time

import torch

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
if not torch.cuda.is_available():
    print("torch_app: CUDA is not available")
    sys.exit(3)
path = os.environ.get("CUDA_INJECTION64_PATH")
# The same file the driver loads: one instance of the library.
lib = ctypes.CDLL(path) if path else None
if lib and not hasattr(lib, "dpt_range_push"):
    lib = None  # another injection library (bench/bench_cupti_steps.sh's floor)
if lib:
    lib.dpt_range_push.argtypes = [ctypes.c_char_p]
    lib.dpt_step_begin.argtypes = [ctypes.c_uint64]


def push(name):
    if lib:
        lib.dpt_range_push(name)


def pop():
    if lib:
        lib.dpt_range_pop()


torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 4096),
    torch.nn.GELU(), torch.nn.Linear(4096, 1024)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
x = torch.randn(512, 1024, device="cuda")
target = torch.randn(512, 1024, device="cuda")
times = []
for step in range(steps):
    t0 = time.perf_counter()
    if lib:
        lib.dpt_step_begin(step)
    push(b"forward")
    loss = torch.nn.functional.mse_loss(model(x), target)
    pop()
    push(b"backward")
    loss.backward()
    pop()
    push(b"optimizer")
    opt.step()
    opt.zero_grad(set_to_none=True)
    pop()
    torch.cuda.synchronize()
    if lib:
        lib.dpt_step_end()
    times.append(time.perf_counter() - t0)
print("torch_app: ok, %d steps, loss %.4f, median step %.1f us (after the first 3)" %
      (steps, loss.item(), statistics.median(times[3:]) * 1e6))
