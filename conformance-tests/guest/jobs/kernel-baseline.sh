#!/bin/bash
# The Linux kernel against itself in the guest: RDMA readiness (rxe0, rping, nvme-rdma to nvmet-rdma) and the
# fio figures of the kernel's own nvmet-tcp target, for the side-by-side table.
JOB=kernel-baseline
. "$(dirname "$0")/lib.sh"
NQN=nqn.2026-11.io.nvmeof:kernel-baseline

modprobe -a nvmet nvmet-tcp nvme-tcp nvme-fabrics nvmet-rdma nvme-rdma

# RDMA readiness
check "rxe0 is PORT_ACTIVE" sh -c "ibv_devinfo -d rxe0 | grep -q PORT_ACTIVE"
rping -s -a $GUEST_IP -v -C 3 >/dev/null 2>&1 &
sleep 2
check "rping over rxe0" timeout 60 rping -c -a $GUEST_IP -v -C 3
wait

truncate -s 256M /dev/shm/kernel-ns.img
nvmet_subsystem $NQN
nvmet_namespace $NQN 1 /dev/shm/kernel-ns.img
nvmet_port 1 tcp $GUEST_IP 4420 $NQN
nvmet_port 2 rdma $GUEST_IP 4421 $NQN

# Kernel host to kernel target over RDMA
check "nvme discover -t rdma (kernel target)" sh -c "nvme discover -t rdma -a $GUEST_IP -s 4421 | grep -q $NQN"
if nvme connect -t rdma -a $GUEST_IP -s 4421 -n $NQN -i 2 >/dev/null 2>&1 && wait_dev $NQN 30 >/dev/null; then
  pass "nvme connect -t rdma (kernel target)"
  dev="$(nvme_dev_for $NQN)"
  check "fio verify 4k QD16 over nvme-rdma (kernel target)" fio_verify kernel-rdma-4k-qd16 "$dev" 4k 16 8M
  check "fio perf 4k randread QD1 (kernel nvmet-rdma)" fio_perf kernel-rdma-randread-4k-qd1 "$dev" randread 4k 1 10
  check "fio perf 4k randread QD16 (kernel nvmet-rdma)" fio_perf kernel-rdma-randread-4k-qd16 "$dev" randread 4k 16 10
  check "fio perf 4k randwrite QD16 (kernel nvmet-rdma)" fio_perf kernel-rdma-randwrite-4k-qd16 "$dev" randwrite 4k 16 10
  check "fio perf 128k read QD16 (kernel nvmet-rdma)" fio_perf kernel-rdma-read-128k-qd16 "$dev" read 128k 16 10
  check "nvme disconnect (rdma)" nvme disconnect -n $NQN
else
  fail "nvme connect -t rdma (kernel target)"
fi

# Kernel host to kernel target over TCP: the baseline for our target's figures
if nvme connect -t tcp -a $GUEST_IP -s 4420 -n $NQN -i 2 >/dev/null 2>&1 && wait_dev $NQN 30 >/dev/null; then
  pass "nvme connect -t tcp (kernel target)"
  dev="$(nvme_dev_for $NQN)"
  check "fio perf 4k randread QD1 (kernel nvmet-tcp)" fio_perf kernel-tcp-randread-4k-qd1 "$dev" randread 4k 1 10
  check "fio perf 4k randread QD16 (kernel nvmet-tcp)" fio_perf kernel-tcp-randread-4k-qd16 "$dev" randread 4k 16 10
  check "fio perf 4k randwrite QD16 (kernel nvmet-tcp)" fio_perf kernel-tcp-randwrite-4k-qd16 "$dev" randwrite 4k 16 10
  check "fio perf 128k read QD16 (kernel nvmet-tcp)" fio_perf kernel-tcp-read-128k-qd16 "$dev" read 128k 16 10
  check "nvme disconnect (tcp)" nvme disconnect -n $NQN
else
  fail "nvme connect -t tcp (kernel target)"
fi
nvmet_clear
finish
