"""np.matmul in a child process whose OpenBLAS runs one chosen kernel.

OpenBLAS built for several CPUs (as NumPy's wheels are) picks its kernel when it loads, from
the CPU, unless OPENBLAS_CORETYPE names one; that choice cannot change afterwards, so a second
kernel needs a second process. BlasChild starts one (this file run as a script) and drives it
over a pipe, one JSON line each way: the parent keeps the interleaving of its timing passes
(pyrt.bench.timing.timed_passes, with BlasChild.variant), the child times its own samples so
that the pipe's round trip stays out of them.

Requests and replies:
    {"op": "shape", "m", "n", "k", "trans_a", "trans_b"}   -> {"ok": result close to float64}
    {"op": "threads", "n"}                                 -> {}   (threadpoolctl BLAS limit)
    {"op": "time", "calls", "untimed"}                     -> {"s": seconds per call}
"""

import json
import os
import subprocess
import sys
from pathlib import Path


class BlasChild:
    """A child process running np.matmul with OPENBLAS_CORETYPE=coretype.

    `architecture` is the kernel its OpenBLAS reports (threadpoolctl), None when the child
    finds no OpenBLAS; the caller compares it with the coretype it asked for.
    """

    def __init__(self, coretype):
        env = dict(os.environ, OPENBLAS_CORETYPE=coretype)
        self._proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve())],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
                                      text=True, bufsize=1)
        self.architecture = self._reply()["architecture"]

    def _reply(self):
        line = self._proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the BLAS child process exited (code {self._proc.wait()})")
        return json.loads(line)

    def _ask(self, op, **fields):
        self._proc.stdin.write(json.dumps(dict(fields, op=op)) + "\n")
        return self._reply()

    def shape(self, m, n, k, trans_a, trans_b):
        """Operands of this shape in the child (random, seeded); whether its product is right."""
        return self._ask("shape", m=m, n=n, k=k, trans_a=trans_a, trans_b=trans_b)["ok"]

    def variant(self, key, threads):
        """(key, setup, run, sampler) for timed_passes: the child's product at `threads`."""
        return (key, lambda: self._ask("threads", n=threads),
                lambda: self._ask("time", calls=1, untimed=0),
                lambda calls, untimed: self._ask("time", calls=calls, untimed=untimed)["s"])

    def close(self):
        self._proc.stdin.close()
        self._proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def serve():
    """The child: answer requests from stdin until it closes."""
    import time

    import numpy as np
    from threadpoolctl import ThreadpoolController

    controller = ThreadpoolController()
    blas = [i for i in controller.info() if i.get("internal_api") == "openblas"]
    print(json.dumps({"architecture": blas[0].get("architecture") if blas else None}),
          flush=True)
    rng = np.random.default_rng(0)
    limit = None
    A = B = c = None
    for line in sys.stdin:
        req = json.loads(line)
        if req["op"] == "shape":
            m, n, k = req["m"], req["n"], req["k"]
            a = rng.standard_normal((k, m) if req["trans_a"] else (m, k)).astype(np.float32)
            b = rng.standard_normal((n, k) if req["trans_b"] else (k, n)).astype(np.float32)
            A, B = (a.T if req["trans_a"] else a), (b.T if req["trans_b"] else b)
            c = np.empty((m, n), np.float32)
            np.matmul(A, B, out=c)
            ref = A.astype(np.float64) @ B.astype(np.float64)
            reply = {"ok": bool(np.allclose(c, ref, rtol=1e-4, atol=1e-4 * np.sqrt(k)))}
        elif req["op"] == "threads":
            if limit is not None:
                limit.restore_original_limits()
            limit = controller.limit(limits=req["n"], user_api="blas")
            reply = {}
        else:
            for _ in range(req["untimed"]):
                np.matmul(A, B, out=c)
            t0 = time.perf_counter()
            for _ in range(req["calls"]):
                np.matmul(A, B, out=c)
            reply = {"s": (time.perf_counter() - t0) / max(1, req["calls"])}
        print(json.dumps(reply), flush=True)


if __name__ == "__main__":
    serve()
