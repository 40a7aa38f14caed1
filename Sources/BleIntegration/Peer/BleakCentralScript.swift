/// bleak's side of `outside.bleakCentral`, written to a temporary file and run with the
/// Python of `scripts/bleak-python`'s venv (so the scenario needs no file of the checkout at
/// run time, in the VM or on the host).
///
///     script ADAPTER NAME SERVICE COMMAND RESPONSE TICKER
///
/// Prints one JSON object per step (the scenario compares them) and exits non-zero when a step
/// fails. btvirt reports an advertisement once per scan start, so a scan that stays silent for
/// 4 s is started again.
enum BleakCentralScript {
    static let source = #"""
import asyncio
import json
import sys

from bleak import BleakClient, BleakScanner

ADAPTER, NAME, SERVICE, COMMAND, RESPONSE, TICKER = sys.argv[1:7]


def say(**fields):
    print(json.dumps(fields), flush=True)


async def find():
    found = {}
    event = asyncio.Event()

    def seen(device, advertisement):
        # The name and the service UUID can come in separate reports (advertisement and scan
        # response), and a device bluetoothd already knows is reported on its first change:
        # wait for the report that carries both.
        if advertisement.local_name == NAME and SERVICE in advertisement.service_uuids and "device" not in found:
            found["device"], found["advertisement"] = device, advertisement
            event.set()

    for _ in range(10):
        async with BleakScanner(seen, bluez={"adapter": ADAPTER}):
            try:
                await asyncio.wait_for(event.wait(), 4.0)
            except asyncio.TimeoutError:
                continue
        break
    if "device" not in found:
        raise RuntimeError(f"{NAME} was not found on {ADAPTER}")
    return found["device"], found["advertisement"]


async def main():
    device, advertisement = await find()
    say(step="scan", name=advertisement.local_name, service_uuids=sorted(advertisement.service_uuids),
        manufacturer_data={str(key): value.hex() for key, value in sorted(advertisement.manufacturer_data.items())})
    client = BleakClient(device, timeout=30.0)
    await client.connect()
    try:
        await exercise(client)
    finally:
        await client.disconnect()
    say(step="done")


async def exercise(client):
    say(step="connect", connected=client.is_connected)
    service = client.services.get_service(SERVICE)
    if service is None:
        raise RuntimeError(f"service {SERVICE} not resolved")
    say(step="services", characteristics=sorted(c.uuid for c in service.characteristics))
    say(step="read", value=(await client.read_gatt_char(TICKER)).hex())

    packets = []
    four = asyncio.Event()

    def on_response(_, data):
        packets.append(bytes(data))
        if len(packets) >= 4:
            four.set()

    await client.start_notify(RESPONSE, on_response)
    await client.write_gatt_char(COMMAND, b"\x01\x02", response=True)
    await asyncio.wait_for(four.wait(), 20.0)
    say(step="response", packets=len(packets), value=b"".join(packets).hex())
    await client.stop_notify(RESPONSE)

    ticks = []
    two = asyncio.Event()

    def on_tick(_, data):
        ticks.append(bytes(data).hex())
        if len(ticks) >= 2:
            two.set()

    await client.start_notify(TICKER, on_tick)
    await asyncio.wait_for(two.wait(), 20.0)
    say(step="ticker", values=ticks[:2])
    await client.stop_notify(TICKER)


try:
    asyncio.run(asyncio.wait_for(main(), 100.0))
except Exception as error:  # the scenario reads the reason from stderr
    print(f"bleak central failed: {type(error).__name__}: {error}", file=sys.stderr, flush=True)
    sys.exit(1)
"""#
}
