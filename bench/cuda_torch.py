# PyTorch on the same GPU, in the same run as bench/cuda.ts (scripts/gpu-tests.sh runs both): the five operations
# as a PyTorch user writes them, timed with CUDA events (median of reps), plus a read-bandwidth probe (a sum over
# the 15 GB corpus) that gives the memory floor the ratios are reported against.
import json
import sys

import torch
import torch.nn.functional as F

quick = "--quick" in sys.argv
out = next((a[6:] for a in sys.argv if a.startswith("--out=")), None)
scale = 0.01 if quick else 1.0
dev = "cuda"
torch.manual_seed(0)


def time(fn, reps=7):
    for _ in range(2):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        ts.append(a.elapsed_time(b))
    ts.sort()
    return {"medianMs": ts[len(ts) // 2], "minMs": ts[0]}


res = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0), "quick": quick}


def log(name, r):
    res[name] = r
    print(name, json.dumps(r), flush=True)


with torch.no_grad():
    n, d, k = int(10_000_000 * scale), 768, 100
    corpus = torch.empty(n, d, dtype=torch.bfloat16, device=dev).uniform_(-1, 1)
    probe = time(lambda: corpus.sum(dtype=torch.float32), 5)
    log("read_probe", {"bytes": n * d * 2, **probe, "GBps": n * d * 2 / probe["medianMs"] / 1e6})
    for b in (1, 64):
        q = torch.empty(b, d, dtype=torch.bfloat16, device=dev).uniform_(-1, 1)
        log(f"dense_bf16_B{b}", time(lambda: torch.topk(q @ corpus.T, k, dim=1)))
    del corpus

    docs, ln, d, lq = int(100_000 * scale), 180, 128, 32
    D = torch.empty(docs, ln, d, dtype=torch.float16, device=dev).uniform_(-1, 1)
    Q = torch.empty(lq, d, dtype=torch.float16, device=dev).uniform_(-1, 1)
    log("maxsim_f16", time(lambda: torch.einsum("qd,ntd->ntq", Q, D).max(dim=1).values.float().sum(dim=1)))
    del D

    b, l, v = (16 if quick else 256), 256, 30522
    X = torch.empty(b, l, v, dtype=torch.bfloat16, device=dev).uniform_(-4, 1)
    mask = torch.ones(b, l, device=dev, dtype=torch.bfloat16)
    log("splade_bf16", time(lambda: torch.max(torch.log1p(torch.relu(X)) * mask.unsqueeze(-1), dim=1)))
    del X

    b, m, ens_l = int(100_000 * scale), 20, 100
    Z = torch.empty(b, m, ens_l, device=dev).uniform_(0, 0.01)

    def mi():
        p = torch.softmax(Z / 1e-3, dim=-1)
        mean = p.mean(dim=1)
        h_mean = -(mean * torch.log(mean + 1e-6)).sum(-1)
        h_members = -(p * torch.log(p + 1e-6)).sum(-1).mean(-1)
        return h_mean - h_members

    log("ensemble_mi", time(mi, 11))
    del Z

bq, bm, d = (256 if quick else 4096), (512 if quick else 8192), 768
pos = (torch.arange(bq, device=dev) * 2) % bm
for dt, name in ((torch.float32, "infonce_f32"), (torch.bfloat16, "infonce_bf16")):
    q = torch.empty(bq, d, dtype=dt, device=dev).uniform_(-1, 1).requires_grad_()
    p = torch.empty(bm, d, dtype=dt, device=dev).uniform_(-1, 1).requires_grad_()

    def step():
        loss = F.cross_entropy((q @ p.T).float(), pos)
        loss.backward()
        q.grad = None
        p.grad = None

    log(name, time(step))

if out:
    with open(out, "w") as f:
        json.dump(res, f, indent=2)
