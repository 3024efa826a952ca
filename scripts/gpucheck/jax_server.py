"""A JAX program on the GPU for scripts/gpu-check's capture check.

Serves jax.profiler's ProfilerService on the port given (argv[1]), says
"ready" once its jitted step has compiled, then runs training steps
(StepTraceAnnotation "train") until its stdin closes or two minutes pass.
"""
import os, sys, threading, time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
import jax, jax.numpy as jnp, jax.profiler

jax.profiler.start_server(int(sys.argv[1]))
if jax.devices()[0].platform != "gpu":
    sys.exit(f"jax_server: no GPU: JAX sees {jax.devices()}")
step = jax.jit(lambda x: jnp.tanh(x @ x) * 0.5)
x = jnp.ones((2048, 2048), jnp.float32)
step(x).block_until_ready()
done = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
print("ready", flush=True)
end = time.time() + 120
i = 0
while not done.is_set() and time.time() < end:
    with jax.profiler.StepTraceAnnotation("train", step_num=i):
        x = step(x).block_until_ready()
    i += 1
