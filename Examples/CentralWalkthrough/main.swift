import ExampleSupport
import Foundation

// CentralWalkthrough [--sim] [--name PREFIX] [--bus ADDRESS] [--adapter NAME]
let usage = """
usage: CentralWalkthrough [--sim] [--name PREFIX] [--deadline SECONDS] [--bus ADDRESS] [--adapter NAME]
  Scans for a peripheral whose name starts with PREFIX (default BleKit-Walkthrough), connects,
  discovers services, characteristics and descriptors, reads, writes "hello", subscribes, writes
  "ping" and expects it back as a notification, then disconnects. --sim runs against BleSim.
"""
// The device of seed 004, in BleSim: one characteristic that can be read, written and notified,
// echoing what is written as a notification; and a battery service.
let scenario = #"""
{"timing": {"scale": 0.2}, "peripherals": [
  {"address": "C0:FF:EE:00:04:01", "name": "BleKit-Walkthrough", "rssi": -50, "serviceUUIDs": ["ffe0"],
   "services": [
     {"uuid": "ffe0", "characteristics": [{"uuid": "ffe1", "flags": ["read", "write", "notify"], "value": "00"}]},
     {"uuid": "180f", "characteristics": [{"uuid": "2a19", "flags": ["read"], "value": "64"}]}],
   "rules": [{"on": {"write": "ffe1"}, "then": [{"echo": "ffe1"}]}]}]}
"""#
let session = await ExampleSession.start("CentralWalkthrough", scenario: scenario, usage: usage)
var namePrefix = "BleKit-Walkthrough"
if let index = session.arguments.firstIndex(of: "--name"), index + 1 < session.arguments.count { namePrefix = session.arguments[index + 1] }
var deadline = 60.0
if let index = session.arguments.firstIndex(of: "--deadline"), index + 1 < session.arguments.count { deadline = Double(session.arguments[index + 1]) ?? 60 }
let walkthrough = CentralWalkthrough(namePrefix: namePrefix)
walkthrough.start(options: session.options)
if !(await walkthrough.finished.wait(seconds: deadline)) {
    walkthrough.log.note("gave up after \(Int(deadline)) s")
}
await MainActor.run { walkthrough.stop() }
let status = walkthrough.log.finish()
await session.stop()
exit(status)
