"""A small JAX program profiled by JAX's own profiler (TSL): its XSpace
carries TSL's device facts (SMs, clock, memory, bandwidth) for the GPU,
to compare with what devprof's NVML source writes.

    python3 jax_trace.py OUTDIR
"""
import glob, os, shutil, sys

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
import jax, jax.numpy as jnp  # noqa: E402

out = sys.argv[1]
x = jnp.ones((2048, 2048), jnp.float32)
f = jax.jit(lambda a: (a @ a).sum())
f(x).block_until_ready()
with jax.profiler.trace(out + "/tsl"):
    for _ in range(5):
        f(x).block_until_ready()
for p in glob.glob(out + "/tsl/**/*.xplane.pb", recursive=True):
    shutil.copy(p, os.path.join(out, "jax-tsl.xplane.pb"))
    print("jax_trace:", p, os.path.getsize(p), "bytes")
