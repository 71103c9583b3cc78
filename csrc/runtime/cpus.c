/*
 * cpus.c - how many CPUs the pool may keep busy.
 *
 * The affinity mask says which CPUs the process may run on (pyrt_cpu_count; the default thread
 * count). A container's CPU quota can allow fewer: `docker run --cpus=2` on a 64-CPU host
 * leaves all 64 in the mask but lets the process use 2 CPUs' worth of time, and threads beyond
 * that only take turns. So the pool keeps at most
 *
 *   PYRT_CPUS, if it holds a count from 1 to PYRT_MAX_THREADS, else
 *   the CPUs of the affinity mask, or the cgroup's quota rounded up if that is fewer
 *   (cgroup v2 cpu.max "quota period", or v1 cpu.cfs_quota_us / cpu.cfs_period_us, at the
 *   mount points a container sees as its own)
 *
 * threads awake (README: more threads than CPUs), and kernels cut their work for
 * pyrt_max_concurrency() threads. It is read when the pool starts or its size changes, and at
 * the first call that needs it before then; reading it costs system calls and file reads, so
 * every other call sees the cached value.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"

static _Atomic int g_cpus; /* the last count read; 0: none yet */

int pyrt_cpu_count(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0)
            return n;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

int env_count(const char *name)
{
    const char *text = getenv(name);
    if (!text || !*text)
        return 0;
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    return errno == 0 && *end == '\0' && v >= 1 && v <= PYRT_MAX_THREADS ? (int)v : 0;
}

/* The first two numbers of a file, or 0 read (as for "max 100000": no quota). */
static int read_numbers(const char *path, long long *a, long long *b)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int n = fscanf(f, "%lld %lld", a, b);
    fclose(f);
    return n < 0 ? 0 : n;
}

/* CPUs the cgroup's quota allows, rounded up, or 0 where there is no quota. */
static int cgroup_quota_cpus(void)
{
    long long quota, period;
    if (read_numbers("/sys/fs/cgroup/cpu.max", &quota, &period) != 2) {
        long long unused;
        if (read_numbers("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", &quota, &unused) != 1
            || read_numbers("/sys/fs/cgroup/cpu/cpu.cfs_period_us", &period, &unused) != 1)
            return 0;
    }
    if (quota <= 0 || period <= 0)
        return 0;
    long long cpus = (quota + period - 1) / period;
    return cpus < PYRT_MAX_THREADS ? (int)cpus : PYRT_MAX_THREADS;
}

int cpus_refresh(void)
{
    int n = env_count("PYRT_CPUS");
    if (n == 0) {
        n = pyrt_cpu_count();
        int quota = cgroup_quota_cpus();
        if (quota > 0 && quota < n)
            n = quota;
    }
    atomic_store_explicit(&g_cpus, n, memory_order_relaxed);
    return n;
}

int pyrt_max_concurrency(void)
{
    int c = atomic_load_explicit(&g_cpus, memory_order_relaxed);
    if (c == 0)
        c = cpus_refresh();
    int n = pyrt_get_num_threads();
    return n < c ? n : c;
}
