#!/usr/bin/env python3
"""bleak's side of the scan benchmark (Benchmarks/RoundTripBenchmark, `scan` section).

    scan.py EXPECTED WINDOW

Scans with BleakScanner's defaults (detection callback, no filter) until 95 % of EXPECTED
advertisers were seen, then measures this process's CPU time over WINDOW seconds of scanning.
Prints "ops=N seconds=S cpu_seconds=C discovered95_seconds=T discovered=D rss_delta=B" and exits
non-zero when a step fails (fewer than 95 % in 60 s).
"""
import asyncio
import resource
import signal
import sys
import time

from bleak import BleakScanner


def cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def resident_bytes():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize()


async def main(expected, window):
    seen = set()
    reached = asyncio.get_running_loop().create_future()

    def on_detect(device, _advertisement):
        seen.add(device.address)
        if len(seen) * 100 >= expected * 95 and not reached.done():
            reached.set_result(None)

    before = resident_bytes()
    scanner = BleakScanner(detection_callback=on_detect)
    started = time.monotonic()
    await scanner.start()
    try:
        await asyncio.wait_for(reached, 60.0)
    except asyncio.TimeoutError:
        raise RuntimeError(f"only {len(seen)} of {expected} advertisers discovered in 60 s")
    discovered = time.monotonic() - started
    cpu0, wall0 = cpu_seconds(), time.monotonic()
    await asyncio.sleep(window)
    cpu, wall = cpu_seconds() - cpu0, time.monotonic() - wall0
    resident = resident_bytes()
    await scanner.stop()
    print(f"ops={expected} seconds={wall:.6f} cpu_seconds={cpu:.6f} discovered95_seconds={discovered:.6f} "
          f"discovered={len(seen)} rss_delta={resident - before}", flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    signal.alarm(300)
    try:
        asyncio.run(main(int(sys.argv[1]), float(sys.argv[2])))
    except Exception as error:  # every failure ends the run with a verdict
        print(f"scan.py: {type(error).__name__}: {error}", file=sys.stderr)
        sys.exit(1)
