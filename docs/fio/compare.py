#!/usr/bin/env python3
"""fio through the nvmeof engine against ./nvmeof bench: same target, same workload, alternating, in one run.

Each measurement runs the load generator pinned to one core (taskset -c CORE) for RAMP + TIME seconds. Its CPU time
(user + system of every thread, from /proc/PID/stat) is sampled at the end of the ramp and again one second before
the end. IOPS come from the tool's own report over the measured window. CPU per I/O is that CPU time divided by
IOPS x the sampled interval.

  taskset -c 0 ./nvmeof target --no-admin --poll-groups 1 --size 2GiB --block-size 4096 &
  NVMEOF_FIO=$PWD/native/target/fio/nvmeof-fio.so python3 docs/fio/compare.py [--rounds 3] [--core 1]

To compare builds (before/after a change), name each fio variant: --variant NAME=ENGINE.so[,JAR][,VAR=VALUE...]
(the JAR is the initiator's, as NVMEOF_FIO_CLASSPATH; VAR=VALUE are environment variables for that fio, e.g.
NVMEOF_FIO_SPIN=16). The variants and bench alternate, their order reversed every other round.

Prints one line per measurement and a table of medians (markdown).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime (all threads)


def run(cmd, ramp, seconds, env=None):
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    t0 = time.time()
    time.sleep(ramp + 0.5)
    c1, t1 = cpu_seconds(p.pid), time.time()
    time.sleep(max(1.0, seconds - 1.5))
    c2, t2 = cpu_seconds(p.pid), time.time()
    out, err = p.communicate(timeout=120)
    if p.returncode != 0:
        sys.exit(f"{cmd[0]} failed ({p.returncode}): {err[-500:]}")
    job = json.loads(out[out.index("{"):])["jobs"][0]
    side = job["read"] if job["read"]["iops"] > 0 else job["write"]
    iops = side["iops"]
    return {"iops": iops, "MiBps": side["bw_bytes"] / 1048576 if "bw_bytes" in side else side["bw"] / 1024,
            "cpu_us_per_io": (c2 - c1) / (iops * (t2 - t1)) * 1e6, "p50_us": percentile(side, "50.000000"),
            "p99_us": percentile(side, "99.000000"),
            "p999_us": percentile(side, "99.900000"), "wall": time.time() - t0}


def percentile(side, key):
    p = side.get("clat_ns", {}).get("percentile", {})
    return p.get(key, 0) / 1000.0


def main():
    a = argparse.ArgumentParser()
    a.add_argument("--rounds", type=int, default=3)
    a.add_argument("--core", default="1", help="taskset CPU list for the load generator, e.g. 1 or 0-1")
    a.add_argument("--time", type=int, default=10)
    a.add_argument("--ramp", type=int, default=3)
    a.add_argument("--port", default="4420")
    a.add_argument("--nqn", default="nqn.2026-11.io.nvmeof:default")
    a.add_argument("--variant", action="append", default=[], help="NAME=ENGINE.so[,JAR][,VAR=VALUE...]")
    a.add_argument("--workloads", default="randread:4k:32,read:128k:32,randread:4k:1", help="RW:BS:QD,...")
    args = a.parse_args()
    variants = {}
    for v in args.variant:
        name, _, spec = v.partition("=")
        parts = spec.split(",")
        env = dict(p.split("=", 1) for p in parts[1:] if "=" in p)
        jars = [p for p in parts[1:] if "=" not in p]
        if jars:
            env["NVMEOF_FIO_CLASSPATH"] = jars[0]
        variants[name] = (parts[0], env)
    if not variants:
        engine = os.environ.get("NVMEOF_FIO") or sys.exit("set NVMEOF_FIO to the engine's path (or give --variant)")
        variants["fio"] = (engine, {})
    here = os.path.dirname(os.path.abspath(__file__))
    nvmeof = os.path.join(here, "..", "..", "nvmeof")
    workloads = [(w.split(":")[0], w.split(":")[1], int(w.split(":")[2])) for w in args.workloads.split(",")]
    tools = ["bench"] + list(variants)
    results = {}
    for rw, bs, qd in workloads:
        for r in range(args.rounds):
            for tool in (tools if r % 2 == 0 else tools[::-1]):
                env = None
                if tool == "bench":
                    cmd = ["taskset", "-c", args.core, nvmeof, "bench", "-a", "127.0.0.1", "-s", args.port, "-n",
                           args.nqn, "--rw", rw, "--bs", bs, "--qd", str(qd), "--time", str(args.time), "--ramp",
                           str(args.ramp), "--json"]
                else:
                    engine, extra = variants[tool]
                    env = dict(os.environ, **extra)
                    cmd = ["taskset", "-c", args.core, "fio", "--output-format=json", "--name=job",
                           f"--ioengine=external:{engine}", f"--trsvcid={args.port}", f"--subnqn={args.nqn}",
                           "--thread=1", f"--rw={rw}", f"--bs={bs}", f"--iodepth={qd}", "--size=2g",
                           "--time_based=1", f"--runtime={args.time}", f"--ramp_time={args.ramp}"]
                m = run(cmd, args.ramp, args.time, env)
                results.setdefault((rw, bs, qd, tool), []).append(m)
                print(f"{rw} {bs} qd{qd} {tool} round {r + 1}: {m['iops']:,.0f} IOPS, {m['MiBps']:.1f} MiB/s, "
                      f"{m['cpu_us_per_io']:.2f} us CPU/IO, p50 {m['p50_us']:.1f} us, p99.9 {m['p999_us']:.1f} us", flush=True)
    print("\n| workload | tool | IOPS | MiB/s | CPU per I/O | p50 | p99 | p99.9 | fio / bench |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for rw, bs, qd in workloads:
        med = {}
        for tool in tools:
            ms = results[(rw, bs, qd, tool)]
            med[tool] = {k: statistics.median(m[k] for m in ms) for k in ms[0]}
        for tool in tools:
            m = med[tool]
            ratio = "" if tool == "bench" else f"{m['iops'] / med['bench']['iops']:.3f}"
            print(f"| {rw} {bs} QD {qd} | {tool} | {m['iops']:,.0f} | {m['MiBps']:.1f} | {m['cpu_us_per_io']:.2f} us | "
                  f"{m['p50_us']:.1f} us | {m['p99_us']:.1f} us | {m['p999_us']:.1f} us | {ratio} |")


if __name__ == "__main__":
    main()
