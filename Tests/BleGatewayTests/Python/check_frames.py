#!/usr/bin/env python3
"""Checks BleKit gateway output with outside decoders.

Input (argv[1]): a JSON list of {"undecoded": <frame from home/<gw>/BTtoMQTT/undecoded>,
"published": <BleKit's decoded message for the same device>}.
theengsdecoder decodes each undecoded frame; bthome-ble parses BTHome service data. Every value
either outside decoder produces for a key BleKit also publishes must be equal. Prints one line
per frame and a verdict; exit status 1 when any frame disagrees or nothing was checked.
"""
import json
import sys
import time

from TheengsDecoder import decodeBLE

try:
    from bthome_ble import BTHomeBluetoothDeviceData
    from habluetooth import BluetoothServiceInfoBleak
except ImportError:  # reported per frame below
    BTHomeBluetoothDeviceData = None

# bthome-ble's entity keys -> Theengs' key names, which BleKit publishes.
BTHOME_KEYS = {"temperature": "tempc", "humidity": "hum", "battery": "batt", "voltage": "volt",
               "pressure": "pres", "illuminance": "lux", "packet_id": "packet", "carbon_dioxide": "co2",
               "moisture": "moist", "power": "power", "energy": "energy", "dew_point": "dewpoint",
               "pm25": "pm25", "pm10": "pm10", "motion": "motion", "door": "door", "window": "window"}
IGNORED = {"id", "rssi", "name", "servicedata", "servicedatauuid", "manufacturerdata", "gateway", "txpower"}


def close(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return bool(a) == bool(b)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(a - b) <= 1e-6 * max(1.0, abs(a), abs(b))
    return a == b


def bthome(frame):
    if BTHomeBluetoothDeviceData is None:
        raise RuntimeError("bthome-ble is not installed")
    uuid = "0000%s-0000-1000-8000-00805f9b34fb" % frame["servicedatauuid"]
    info = BluetoothServiceInfoBleak(name=frame.get("name", ""), address=frame["id"], rssi=frame["rssi"],
                                     manufacturer_data={}, service_data={uuid: bytes.fromhex(frame["servicedata"])},
                                     service_uuids=[], source="local", device=None, advertisement=None,
                                     connectable=False, time=time.monotonic(), tx_power=None)
    update = BTHomeBluetoothDeviceData().update(info)
    values = {}
    for key, value in list(update.entity_values.items()) + list(update.binary_entity_values.items()):
        if key.key in BTHOME_KEYS:
            values[BTHOME_KEYS[key.key]] = value.native_value
    return values


def main():
    pairs = json.load(open(sys.argv[1]))
    checked = 0
    failures = 0
    for pair in pairs:
        frame, published = pair["undecoded"], pair["published"]
        outside = {}
        source = []
        decoded = decodeBLE(json.dumps(frame))
        if decoded:
            decoded = json.loads(decoded)
            source.append("theengsdecoder:" + decoded.get("model_id", "?"))
            for key, value in decoded.items():
                if key not in IGNORED and key not in ("brand", "model", "type", "model_id", "cidc", "acts", "cont", "track"):
                    outside[key] = value
            if decoded.get("model_id") != published.get("model_id"):
                print("MISMATCH %s model_id: theengsdecoder %r, BleKit %r" % (frame["id"], decoded.get("model_id"), published.get("model_id")))
                failures += 1
        if frame.get("servicedatauuid") == "fcd2":
            source.append("bthome-ble")
            outside.update(bthome(frame))
        if not outside:
            print("NODECODER %s (%s): no outside decoder knows this frame" % (frame["id"], published.get("model_id")))
            continue
        bad = [(k, v, published.get(k)) for k, v in outside.items() if k not in published or not close(v, published[k])]
        checked += 1
        if bad:
            failures += 1
            print("MISMATCH %s %s: %s" % (frame["id"], "+".join(source), "; ".join("%s outside=%r BleKit=%r" % b for b in bad)))
        else:
            print("OK %s %s: %s" % (frame["id"], "+".join(source), json.dumps(outside, sort_keys=True)))
    print("VERDICT checked=%d failures=%d" % (checked, failures))
    return 0 if checked > 0 and failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
