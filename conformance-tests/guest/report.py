#!/usr/bin/env python3
"""Summarises an interop run: the checks per job and the side-by-side fio figures (Markdown on stdout)."""
import glob
import json
import os
import sys

results = sys.argv[1]
print("# Interop run\n")
for summary in sorted(glob.glob(os.path.join(results, "*.summary"))):
    job = os.path.basename(summary)[:-len(".summary")]
    lines = [l.rstrip("\n") for l in open(summary) if l.strip()]
    ok = sum(1 for l in lines if l.startswith("PASS"))
    print(f"## {job}: {ok}/{len(lines)} passed\n")
    for l in lines:
        verdict, _, rest = l.partition(" ")
        print(f"- {'pass' if verdict == 'PASS' else '**FAIL**'}: {rest}")
    print()


def fio(name):
    path = os.path.join(results, f"perf-{name}.json")
    if not os.path.exists(path):
        return None
    job = json.load(open(path))["jobs"][0]
    side = job["read"] if job["read"]["iops"] > 0 else job["write"]
    # Total latency (submission + completion): with a target in the same guest, libaio's io_submit can carry most
    # of the I/O, so completion latency alone would flatter the faster path.
    lat = side["lat_ns"]
    return side["iops"], side["bw"] / 1024, lat["mean"] / 1000, lat.get("percentile", {}).get("99.000000", 0) / 1000


for transport, title in [("tcp", "NVMe/TCP"), ("rdma", "NVMe/RDMA over Soft-RoCE")]:
    print(f"## fio through the kernel {title} host, side by side (guest figures)\n")
    print("| workload | kernel target IOPS | MiB/s | mean us | p99 us | nvmeof-java IOPS | MiB/s | mean us | p99 us |"
          " fio through our engine, nvmeof-java target: IOPS | MiB/s | mean us | p99 us |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for w, label in [("randread-4k-qd1", "4 KiB random read, QD 1"), ("randread-4k-qd16", "4 KiB random read, QD 16"),
                     ("randwrite-4k-qd16", "4 KiB random write, QD 16"), ("read-128k-qd16", "128 KiB sequential read, QD 16")]:
        k, o, e = fio(f"kernel-{transport}-" + w), fio(f"ours-{transport}-" + w), fio(f"engine-ours-{transport}-" + w)
        cell = lambda r: "| n/a | | | " if r is None else f"| {r[0]:,.0f} | {r[1]:.1f} | {r[2]:,.0f} | {r[3]:,.0f} "
        print(f"| {label} {cell(k)}{cell(o)}{cell(e)}|")
    print()



print("## Our initiator (nvmeof.jar bench) over NVMe/RDMA, side by side (guest figures)\n")
print("| workload | kernel nvmet-rdma IOPS | MiB/s | mean us | p99 us | nvmeof-java target IOPS | MiB/s | mean us | p99 us |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for w, label in [("randread-4k-qd1", "4 KiB random read, QD 1"), ("randread-4k-qd16", "4 KiB random read, QD 16"),
                 ("randwrite-4k-qd16", "4 KiB random write, QD 16"), ("read-128k-qd16", "128 KiB sequential read, QD 16")]:
    k, o = fio("init-kernel-rdma-" + w), fio("init-ours-rdma-" + w)
    cell = lambda r: "| n/a | | | " if r is None else f"| {r[0]:,.0f} | {r[1]:.1f} | {r[2]:,.0f} | {r[3]:,.0f} "
    print(f"| {label} {cell(k)}{cell(o)}|")
print()
