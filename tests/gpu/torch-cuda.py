# SPDX-License-Identifier: BSD-3-Clause
"""PyTorch CUDA tensors through hdal on a real GPU (run by run-real.sh cuda
when the interpreter has torch with a usable GPU and the hdal package).

Each check prints one line and asserts what a user would: values, pointers
equal (zero-copy) or not (copy), and that torch's memory comes back when the
last owner lets go.  Exit status 0 when every check held."""
import gc
import sys

import hdal
import torch

checks = 0


def check(name, cond, detail=""):
    global checks
    checks += 1
    print("%s %s%s" % ("ok  " if cond else "FAIL", name, (": " + detail) if detail else ""))
    if not cond:
        sys.exit(1)


ctx = hdal.default_context()
gpus = [d for d in ctx.devices() if d.platform == "cuda"]
cpu = next(d for d in ctx.devices() if d.platform == "cpu")
check("hdal lists the GPU torch sees", len(gpus) == torch.cuda.device_count(),
      "%d hdal, %d torch" % (len(gpus), torch.cuda.device_count()))
gpu = gpus[0]
check("same name", gpu.kind == torch.cuda.get_device_name(0), gpu.kind)
check("DLPack device", gpu.dlpack_device == (2, 0), str(gpu.dlpack_device))

torch.cuda.synchronize()
base = torch.cuda.memory_allocated()
t = torch.arange(12, dtype=torch.float32, device="cuda").reshape(3, 4)
b = hdal.from_dlpack(t)
check("torch -> hdal: a view on the GPU", b.device == gpu and b.is_view and b.shape == (3, 4))
back = torch.from_dlpack(b)
check("hdal -> torch: zero-copy", back.data_ptr() == t.data_ptr() and back.device.type == "cuda")
check("values", torch.equal(back, t))
del t, back, b
gc.collect()
torch.cuda.synchronize()
check("torch's memory freed once both let go", torch.cuda.memory_allocated() == base,
      "%d bytes left" % (torch.cuda.memory_allocated() - base))

src = torch.arange(20, dtype=torch.float64, device="cuda").reshape(4, 5)
tt = src.t()
b = hdal.from_dlpack(tt)
out = torch.from_dlpack(b)
check("strided GPU tensor", torch.equal(out.cpu(), tt.cpu()), "strides %s" % (b.strides,))

h = torch.arange(6, dtype=torch.int32)
b = hdal.from_dlpack(h, device=gpu)
g = torch.from_dlpack(b)
check("CPU tensor copied onto the GPU", g.device.type == "cuda" and not b.is_view and torch.equal(g.cpu(), h))
c = b.to_device(cpu)
check("GPU buffer copied to the CPU", c.device == cpu and torch.equal(torch.from_dlpack(c), h))
b2 = hdal.from_dlpack(torch.arange(6, dtype=torch.int32, device="cuda") * 2, device=cpu)
check("GPU tensor imported onto the CPU", torch.equal(torch.from_dlpack(b2), h * 2))

# Work queued on a side stream when the tensor is handed over.  Through
# torch's C exchange API (torch 2.10 and later) hdal orders its copy after
# torch's current stream (current_work_stream); through __dlpack__ it passes
# its stream to torch, which orders its work before it.
table = hasattr(torch.Tensor, "__dlpack_c_exchange_api__")
print("torch %s: %s" % (torch.__version__, "C exchange API" if table else "__dlpack__ only"))
s = torch.cuda.Stream()
with torch.cuda.stream(s):
    big = torch.full((1 << 24,), 3.0, device="cuda")
    for _ in range(8):
        big = big * 1.0 + 0.0
    b = hdal.from_dlpack(big, device=cpu)
check("ordered after the producer's current stream", bool((torch.from_dlpack(b) == 3.0).all()))
if table:
    # hdal's table, as torch sees it: torch imports an hdal buffer through it, zero-copy.
    g = hdal.from_dlpack(torch.arange(5, dtype=torch.float32, device="cuda"))
    t5 = torch.from_dlpack(g)
    check("torch reads hdal's CUDA buffer", t5.device.type == "cuda" and torch.equal(t5.cpu(), torch.arange(5.0)))

try:  # the tests' C consumer of hdal's table, where the build tree's python/.libs is on the path
    import _exchange_probe as probe
except ImportError:
    probe = None
if probe:
    check("hdal's work stream on CUDA is the legacy default stream", probe.stream(hdal.Buffer, (2, 0)) == 0)
    a = probe.allocate(hdal.Buffer, (2, 0), (3, 4), (2, 32, 1))
    ta = torch.from_dlpack(a)
    ta.fill_(2.5)
    check("the table's allocator on the GPU", a.device == gpu and a.shape == (3, 4) and
          bool((torch.from_dlpack(a.to_device(cpu)) == 2.5).all()))

stats = gpu.memory_stats()
check("memory_stats", isinstance(stats, dict) and stats.get("bytes_in_use", -1) >= 0, str(stats))
print("%d checks passed on %s" % (checks, gpu.kind))
