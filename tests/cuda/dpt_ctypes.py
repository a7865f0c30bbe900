"""libdptrace's annotation API through ctypes, for the Python programs of
the GPU tests and benches: the library CUDA_INJECTION64_PATH names (the
same file the driver loads, so one instance of it), or nothing where the
variable is unset or names another injection library (the CUPTI floor of
bench/bench_cupti_steps.sh)."""
import ctypes
import os


class Annotations:
    def __init__(self):
        path = os.environ.get("CUDA_INJECTION64_PATH")
        lib = ctypes.CDLL(path) if path else None
        if lib is not None and not hasattr(lib, "dpt_range_push"):
            lib = None
        if lib is not None:
            lib.dpt_range_push.argtypes = [ctypes.c_char_p]
            lib.dpt_step_begin.argtypes = [ctypes.c_uint64]
        self.lib = lib

    def step_begin(self, step):
        if self.lib:
            self.lib.dpt_step_begin(step)

    def step_end(self):
        if self.lib:
            self.lib.dpt_step_end()

    def push(self, name):
        if self.lib:
            self.lib.dpt_range_push(name)

    def pop(self):
        if self.lib:
            self.lib.dpt_range_pop()
