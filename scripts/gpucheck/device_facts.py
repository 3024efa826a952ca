"""The device facts the CUDA driver and NVML report, as JSON on stdout.

    python3 device_facts.py

What devprof's NVML source writes on its device track (SMs, compute
capability, memory, clock, bandwidth) is checked against this: the
driver's own attributes through libcuda (cuDeviceGetAttribute), and the
figures nvidia-smi shows. Needs only the driver (ctypes), and PyTorch's
view where PyTorch is there.
"""
import ctypes, json, subprocess, sys

cuda = ctypes.CDLL("libcuda.so.1")
def check(rc, what):
    if rc != 0:
        sys.exit(f"device_facts: {what}: CUresult {rc}")
check(cuda.cuInit(0), "cuInit")
ver = ctypes.c_int()
check(cuda.cuDriverGetVersion(ctypes.byref(ver)), "cuDriverGetVersion")
dev = ctypes.c_int()
check(cuda.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
name = ctypes.create_string_buffer(256)
check(cuda.cuDeviceGetName(name, 256, dev), "cuDeviceGetName")
total = ctypes.c_size_t()
check(cuda.cuDeviceTotalMem_v2(ctypes.byref(total), dev), "cuDeviceTotalMem_v2")
# CUdevice_attribute values (cuda.h).
attrs = {
    "max_threads_per_block": 1, "clock_rate_khz": 13, "multiprocessor_count": 16,
    "memory_clock_rate_khz": 36, "global_memory_bus_width": 37, "l2_cache_size": 38,
    "max_threads_per_multiprocessor": 39, "compute_capability_major": 75,
    "compute_capability_minor": 76, "max_shared_memory_per_multiprocessor": 81,
    "max_registers_per_multiprocessor": 82, "max_blocks_per_multiprocessor": 106,
    "pci_bus_id": 33, "pci_device_id": 34, "pci_domain_id": 50, "warp_size": 10,
}
facts = {"driver_version": ver.value, "name": name.value.decode(), "total_memory": total.value}
for k, a in attrs.items():
    v = ctypes.c_int()
    check(cuda.cuDeviceGetAttribute(ctypes.byref(v), a, dev), f"cuDeviceGetAttribute({k})")
    facts[k] = v.value
# Peak bandwidth as the driver's figures give it: DDR, bus width in bits.
facts["bandwidth_bytes_per_s"] = 2 * facts["memory_clock_rate_khz"] * 1000 * facts["global_memory_bus_width"] // 8
try:
    q = "name,uuid,pci.bus_id,memory.total,clocks.max.sm,clocks.max.memory,power.limit,driver_version"
    facts["nvidia_smi"] = subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv"], capture_output=True, text=True, check=True).stdout
except Exception as e:  # noqa: BLE001 - a fact the report can go without
    facts["nvidia_smi_error"] = str(e)
try:
    import torch
    p = torch.cuda.get_device_properties(0)
    facts["torch"] = {"version": torch.__version__, "cuda": torch.version.cuda, "multi_processor_count": p.multi_processor_count,
                      "major": p.major, "minor": p.minor, "total_memory": p.total_memory, "name": p.name}
except Exception as e:  # noqa: BLE001
    facts["torch_error"] = str(e)
json.dump(facts, sys.stdout, indent=1)
print()
