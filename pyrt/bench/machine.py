"""The machine a benchmark ran on: CPU, the CPUs this process may use, compilers, libraries.

Every benchmark report starts with these facts, so that figures taken on different machines
(or on the same machine under different load) are never compared blindly.
"""

import os
import platform
import subprocess
from pathlib import Path

__all__ = ["affinity", "cpu_model", "first_line", "machine_info", "tbb_version", "version"]


def first_line(cmd):
    """The first line `cmd` prints, or None when it cannot run or prints nothing."""
    try:
        proc = subprocess.run(cmd, check=False, capture_output=True, text=True)
        return proc.stdout.splitlines()[0]
    except (OSError, IndexError):
        return None


def cpu_model():
    """The "model name" of /proc/cpuinfo, or None."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def affinity():
    """The CPUs this process may run on, sorted."""
    return sorted(os.sched_getaffinity(0))


def version(module):
    """module.__version__, or None for a module that was not found (None)."""
    return module.__version__ if module is not None else None


def tbb_version():
    """oneTBB's "major.minor" from its headers, or None without them."""
    try:
        proc = subprocess.run(["g++", "-x", "c++", "-E", "-dM", "-"], check=False,
                              input="#include <oneapi/tbb/version.h>\n",
                              capture_output=True, text=True)
    except OSError:
        return None
    defs = dict(ln.split()[1:3] for ln in proc.stdout.splitlines()
                if ln.startswith("#define TBB_VERSION_M") and len(ln.split()) >= 3)
    if not defs:
        return None
    return f"{defs.get('TBB_VERSION_MAJOR')}.{defs.get('TBB_VERSION_MINOR')}"


def machine_info(extra, root=None):
    """The machine a report was measured on: CPU model and count, gcc, Python, then the
    report's own `extra` facts (library versions, ..., in order), the git commit of the
    checkout `root` (None: not a checkout) and the load average at the start."""
    return {
        "cpu_model": cpu_model(),
        "affinity_cpus": len(os.sched_getaffinity(0)),
        "gcc": first_line(["gcc", "--version"]),
        "python": platform.python_version(),
        **extra,
        "git_commit": first_line(["git", "-C", str(root), "rev-parse", "HEAD"]) if root else None,
        "loadavg_start": os.getloadavg(),
    }
