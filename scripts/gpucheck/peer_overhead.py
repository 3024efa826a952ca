"""The peers' slow-down on gpu-check's launch-bound loop.

Times scripts/gpucheck/workload.cu's devprof_launch_loop (launches tiny
kernels and one synchronize a step) in paired rounds, untraced and traced
by a peer profiler, exactly as gpucheck -overhead times devprof: only the
loop, alternating which goes first, the median of the rounds' ratios.

    python3 peer_overhead.py kineto|tsl LIB [ROUNDS STEPS LAUNCHES]

kineto: PyTorch's profiler (CPU and CUDA activities); tsl: JAX's
(jax.profiler.start_trace, TSL's CUPTI tracer). Both trace the whole
process's CUDA calls, so they see the library's launches as devprof does.
"""
import ctypes, os, statistics, sys, tempfile, time

peer, lib = sys.argv[1], sys.argv[2]
rounds, steps, launches = (int(a) for a in (sys.argv[3:6] + ["7", "2000", "46"][len(sys.argv[3:6]):]))
work = ctypes.CDLL(lib)
work.devprof_launch_loop.argtypes = [ctypes.c_int]

if peer == "kineto":
    import torch
    from torch.profiler import profile, ProfilerActivity
    torch.zeros(1, device="cuda")  # the CUDA context before CUPTI attaches

    class Traced:
        def __enter__(self):
            self.p = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
            self.p.__enter__()
        def __exit__(self, *a):
            self.p.__exit__(*a)
elif peer == "tsl":
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    import jax, jax.profiler
    jax.numpy.zeros(1).block_until_ready()
    assert jax.devices()[0].platform == "gpu", jax.devices()

    class Traced:
        def __enter__(self):
            self.d = tempfile.mkdtemp()
            jax.profiler.start_trace(self.d)
        def __exit__(self, *a):
            jax.profiler.stop_trace()
else:
    sys.exit(f"peer_overhead: unknown peer {peer!r}: want kineto or tsl")


def loop():
    t0 = time.perf_counter()
    for i in range(steps):
        rc = work.devprof_launch_loop(launches)
        if rc:
            sys.exit(f"peer_overhead: step {i}: CUDA error {rc}")
    return time.perf_counter() - t0


def traced():
    t = Traced()
    t.__enter__()
    try:
        return loop()
    finally:
        t.__exit__(None, None, None)


loop()
traced()
offs, ons, ratios = [], [], []
for i in range(rounds):
    if i % 2 == 0:
        off = loop(); on = traced()
    else:
        on = traced(); off = loop()
    offs.append(off / steps * 1e6); ons.append(on / steps * 1e6); ratios.append(on / off)
    print(f"{peer}: overhead round {i}: {offs[-1]:.1f} µs/step untraced, {ons[-1]:.1f} µs/step traced, {ratios[-1]:.3f}×", flush=True)
print(f"{peer}: overhead ({launches} launches + 1 sync a step, {steps} steps, {rounds} rounds): untraced {statistics.median(offs):.1f} µs/step, "
      f"traced {statistics.median(ons):.1f} µs/step, slow-down {statistics.median(ratios):.3f}× median [{min(ratios):.3f} .. {max(ratios):.3f}]", flush=True)
