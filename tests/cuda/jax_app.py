"""jax_app: a small JAX training loop for libdptrace_cupti on a real GPU
(tests/integration/test_dptrace_jax_gpu.sh).  XLA makes its own GPU work
through the driver API (cuLaunchKernel, cuMemcpy*Async, cuGraphLaunch);
the libraries it calls also use the runtime.  A 3-layer MLP, SGD, one step per
dpt_step_begin/end with ranges "input" (a batch copied to the GPU),
"train" (the jitted step) and "output" (the loss copied back), through
the library's C API (ctypes) when CUDA_INJECTION64_PATH names it.

Usage: python3 jax_app.py [STEPS]
Prints the median step time; exit status 3 when JAX has no GPU.
"""
import os
import statistics
import sys
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from dpt_ctypes import Annotations  # noqa: E402

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
try:
    gpu = jax.devices("gpu")[0]
except RuntimeError as e:
    print("jax_app: no GPU: %s" % e)
    sys.exit(3)
dpt = Annotations()


def init(key, sizes):
    params = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        key, k = jax.random.split(key)
        params.append((jax.random.normal(k, (n_in, n_out)) / np.sqrt(n_in), jnp.zeros(n_out)))
    return params


def loss_fn(params, x, y):
    for i, (w, b) in enumerate(params):
        x = x @ w + b
        if i < len(params) - 1:
            x = jax.nn.gelu(x)
    return jnp.mean((x - y) ** 2)


@jax.jit
def train_step(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return [(w - 1e-3 * gw, b - 1e-3 * gb) for (w, b), (gw, gb) in zip(params, grads)], loss


params = jax.device_put(init(jax.random.PRNGKey(0), [1024, 4096, 4096, 1024]), gpu)
rng = np.random.default_rng(0)
xs = rng.standard_normal((512, 1024), dtype=np.float32)
ys = rng.standard_normal((512, 1024), dtype=np.float32)
# Compile (and autotune) before the first step.
train_step(params, jax.device_put(xs, gpu), jax.device_put(ys, gpu))[1].block_until_ready()
times = []
for step in range(steps):
    t0 = time.perf_counter()
    dpt.step_begin(step)
    dpt.push(b"input")
    x = jax.device_put(xs, gpu)
    y = jax.device_put(ys, gpu)
    x.block_until_ready()
    y.block_until_ready()
    dpt.pop()
    dpt.push(b"train")
    params, loss = train_step(params, x, y)
    loss.block_until_ready()
    dpt.pop()
    dpt.push(b"output")
    value = float(jax.device_get(loss))
    dpt.pop()
    dpt.step_end()
    times.append(time.perf_counter() - t0)
print("jax_app: ok, %d steps on %s, loss %.4f, median step %.1f us (after the first 3)" %
      (steps, gpu.device_kind, value, statistics.median(times[3:]) * 1e6))
