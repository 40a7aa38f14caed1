#!/usr/bin/env python3
"""bleak's side of the round-trip benchmark (Benchmarks/RoundTripBenchmark).

    roundtrip.py MODE ADDRESS COUNT WARMUP

Does with bleak (from PyPI, pointed at BleSim by DBUS_SYSTEM_BUS_ADDRESS) what
Benchmarks/c/ble_roundtrip.c does with libdbus: scan, connect, subscribe to ff02, then
  signal   COUNT x (write_gatt_char(ff01, 4 bytes, response=True), await the notification), StartNotify;
  acquire  the same with bluez={"use_start_notify": False} (AcquireNotify);
  ingest   one write starting 0xff, then count COUNT notifications the simulator pushes;
  ingest-acquire  the same over AcquireNotify, where a full socket drops packets: a burst
           ends after 2 s without one, and the missing ones are printed as lost=N.
WARMUP unmeasured round trips (ingest: a burst of WARMUP, triggered by 0xfe) come first.
Prints "ops=N seconds=S cpu_seconds=C lost=L [p50_us=… p99_us=…]" (C: this process's CPU
time, getrusage, over the measured operations; latencies of the measured round trips) and exits non-zero when a step fails.
"""
import asyncio
import resource
import signal
import sys
import time

from bleak import BleakClient, BleakScanner

WRITE = "0000ff01-0000-1000-8000-00805f9b34fb"
NOTIFY = "0000ff02-0000-1000-8000-00805f9b34fb"
TIMEOUT = 10.0
QUIET = 2.0  # AcquireNotify only: a socket loses packets, signals never do


def cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def main(mode, address, count, warmup):
    device = await BleakScanner.find_device_by_address(address, timeout=30.0)
    if device is None:
        raise RuntimeError(f"{address} was not found")
    async with BleakClient(device, timeout=30.0) as client:
        loop = asyncio.get_running_loop()
        state = {"waiter": None, "expected": None, "received": 0, "target": 0, "last": 0.0}
        ingest = mode.startswith("ingest")
        lost, latencies = 0, []

        def on_notify(_, data):
            if ingest:
                state["last"] = time.monotonic()
                state["received"] += 1
                if state["received"] == state["target"] and state["waiter"] and not state["waiter"].done():
                    state["waiter"].set_result(None)
                return
            waiter = state["waiter"]
            if waiter is None or waiter.done():
                return
            if bytes(data) != state["expected"]:
                waiter.set_exception(RuntimeError(f"notification {data.hex()} is not the value written {state['expected'].hex()}"))
            else:
                waiter.set_result(None)

        await client.start_notify(NOTIFY, on_notify, bluez={"use_start_notify": mode not in ("acquire", "ingest-acquire")})

        if ingest:
            for phase, target in ((0, warmup), (1, count)):
                if target == 0:
                    continue
                if phase == 1:
                    start_wall, start_cpu = time.monotonic(), cpu_seconds()
                state["received"], state["target"] = 0, target
                state["waiter"] = loop.create_future()
                state["last"] = time.monotonic()
                await client.write_gatt_char(WRITE, bytes([0xFE if phase == 0 else 0xFF, 0, 0, 0]), response=True)
                # Lost packets never come: the burst ends after QUIET seconds without one.
                while not state["waiter"].done():
                    await asyncio.wait([state["waiter"]], timeout=QUIET / 4)
                    quiet = QUIET if mode == "ingest-acquire" else 20.0
                    if not state["waiter"].done() and time.monotonic() - state["last"] > quiet:
                        break
                if phase == 1:
                    end_wall, end_cpu = state["last"], cpu_seconds()
                    lost = target - state["received"]
                    count = state["received"]
        else:
            start_wall, start_cpu = time.monotonic(), cpu_seconds()
            for index in range(warmup + count):
                if index == warmup:
                    start_wall, start_cpu = time.monotonic(), cpu_seconds()
                value = bytes([0x01, (index >> 16) & 0xFF, (index >> 8) & 0xFF, index & 0xFF])
                state["expected"] = value
                state["waiter"] = loop.create_future()
                sent = time.monotonic()
                await client.write_gatt_char(WRITE, value, response=True)
                # A plain await, as an app would write it; the alarm below bounds a stall.
                await state["waiter"]
                if index >= warmup:
                    latencies.append((time.monotonic() - sent) * 1e6)
            end_wall, end_cpu = time.monotonic(), cpu_seconds()
        if count == 0:
            raise RuntimeError("every notification of the burst was lost")
        cpu, wall = end_cpu - start_cpu, end_wall - start_wall
        line = f"ops={count} seconds={wall:.6f} cpu_seconds={cpu:.6f} lost={lost}"
        if latencies:
            latencies.sort()
            line += f" p50_us={latencies[len(latencies) // 2]:.1f} p99_us={latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]:.1f}"
        print(line, flush=True)
        await client.stop_notify(NOTIFY)


if __name__ == "__main__":
    if len(sys.argv) != 5 or sys.argv[1] not in ("signal", "acquire", "ingest", "ingest-acquire"):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    # A stalled run must not hang the benchmark: SIGALRM's default action ends the process.
    signal.alarm(300)
    try:
        asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
    except Exception as error:  # every failure ends the run with a verdict
        print(f"roundtrip.py ({sys.argv[1]}): {type(error).__name__}: {error}", file=sys.stderr)
        sys.exit(1)
