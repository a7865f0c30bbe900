"""torch_app: a small PyTorch training loop for libdptrace_cupti on a real GPU
(tests/integration/test_dptrace_torch_gpu.sh).  A 3-layer MLP, SGD, one
step per dpt_step_begin/end with ranges "forward", "backward", "optimizer"
through the library's C API (ctypes) when CUDA_INJECTION64_PATH names it.

Usage: python3 torch_app.py [STEPS]
Prints the median step time; exit status 3 when CUDA cannot be used.
"""
import statistics
import sys
import time

import torch
from dpt_ctypes import Annotations

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
if not torch.cuda.is_available():
    print("torch_app: CUDA is not available")
    sys.exit(3)
dpt = Annotations()

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
    dpt.step_begin(step)
    dpt.push(b"forward")
    loss = torch.nn.functional.mse_loss(model(x), target)
    dpt.pop()
    dpt.push(b"backward")
    loss.backward()
    dpt.pop()
    dpt.push(b"optimizer")
    opt.step()
    opt.zero_grad(set_to_none=True)
    dpt.pop()
    torch.cuda.synchronize()
    dpt.step_end()
    times.append(time.perf_counter() - t0)
print("torch_app: ok, %d steps, loss %.4f, median step %.1f us (after the first 3)" %
      (steps, loss.item(), statistics.median(times[3:]) * 1e6))
