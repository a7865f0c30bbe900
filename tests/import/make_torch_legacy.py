#!/usr/bin/env python3
"""Write the trace of a few training steps with PyTorch's own profiler.

Run with Debian 12's python3-torch (1.13, CPU, built without Kineto): its
profiler falls back to the legacy exporter, whose file dptop must refuse
(times relative to the profiler's start, no absolute base).  The output,
torch113_legacy.json, is kept in the repository: the test reads the real
producer's bytes without installing PyTorch.

Usage: make_torch_legacy.py OUT.json
"""
import sys

import torch

model = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(16, 64), torch.randn(16, 4)
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
    for step in range(3):
        with torch.profiler.record_function("ProfilerStep#%d" % step):
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
prof.export_chrome_trace(sys.argv[1])
print("torch", torch.__version__, "wrote", sys.argv[1])
