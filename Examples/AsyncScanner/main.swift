// The async API end to end (BleAsync): wait for the adapter, scan as an async sequence, connect,
// discover, read, subscribe and take notifications, disconnect — straight-line code with a
// deadline on every step, the shape seed 000 recommends for CoreBluetooth ("告别 delegate 回调地狱").
import BleAsync
import BleCore
import ExampleSupport
import Foundation

let usage = """
usage: AsyncScanner [--sim] [--bus ADDRESS] [--adapter NAME]
  Scans for a heart rate sensor (service 180D), connects, reads its battery level, takes three
  heart rate notifications and disconnects; --sim runs against BleSim.
"""
let scenario = #"""
{"timing": {"scale": 0.2}, "peripherals": [
  {"address": "C0:FF:EE:00:05:01", "name": "Async-HR", "rssi": -52, "serviceUUIDs": ["180d"],
   "services": [
     {"uuid": "180d", "characteristics": [{"uuid": "2a37", "flags": ["notify"], "value": "0048"}]},
     {"uuid": "180f", "characteristics": [{"uuid": "2a19", "flags": ["read"], "value": "57"}]}],
   "rules": [{"on": {"every": 100}, "then": [{"notify": "2a37", "value": "064a"}]}]},
  {"address": "C0:FF:EE:00:05:02", "name": "Not-A-Sensor", "rssi": -40, "serviceUUIDs": ["ff00"]}]}
"""#
let session = await ExampleSession.start("AsyncScanner", scenario: scenario, usage: usage)
let log = StepLog("AsyncScanner", steps: ["powered on", "scan", "connect", "discover", "read battery", "notifications", "disconnect"])
let heartRate = CBUUID(string: "180D")
let manager = AsyncBleManager(configuration: session.options)

func run() async {
    var step = "powered on"
    do {
        let state = try await manager.getState(timeout: 5)
        guard state == .poweredOn else { return log.step(step, passed: false, "state \(state)") }
        log.step(step, passed: true, "the adapter is on")

        step = "scan"
        var found: AsyncDiscoveredPeripheral?
        for try await discovered in manager.discoveries(AsyncScanRequest(serviceUUIDs: [heartRate]), timeout: 10) {
            found = discovered
            break
        }
        guard let found else { return log.step(step, passed: false, "nothing advertised 180D") }
        log.step(step, passed: true, "\(found.advertisement.localName ?? found.peripheral.address) at \(found.rssiValue) dBm")

        step = "connect"
        let peripheral = try await manager.connect(found, timeout: 10)
        log.step(step, passed: true, "connected to \(found.peripheral.address)")

        step = "discover"
        let services = try await peripheral.discover(timeout: 10)
        var characteristics: [CBCharacteristic] = []
        for service in services { characteristics += try await peripheral.discover(for: service, timeout: 10) }
        guard let battery = characteristics.first(where: { $0.uuid == CBUUID(string: "2A19") }),
              let measurement = characteristics.first(where: { $0.uuid == CBUUID(string: "2A37") }) else {
            return log.step(step, passed: false, "no battery level or heart rate measurement")
        }
        log.step(step, passed: true, "\(services.map { "\($0.uuid)" }.joined(separator: ", "))")

        step = "read battery"
        let level = try await peripheral.read(for: battery, timeout: 5)
        log.step(step, passed: level.count == 1, "\(level.first.map { "\($0) %" } ?? "empty")")

        step = "notifications"
        var beats: [Int] = []
        for try await value in try await peripheral.subscribe(to: measurement, timeout: 5) {
            if value.count >= 2 { beats.append(Int(value[1])) }
            if beats.count == 3 { break }
        }
        log.step(step, passed: beats.count == 3, "\(beats.map { "\($0) bpm" }.joined(separator: ", "))")

        step = "disconnect"
        try await manager.disconnect(peripheral, timeout: 5)
        log.step(step, passed: true, "disconnected")
    } catch {
        log.step(step, passed: false, "\(error)")
    }
}

let finished = Completion()
Task {
    await run()
    finished.signal()
}
if !(await finished.wait(seconds: 60)) { log.note("gave up after 60 s") }
manager.close()
let status = log.finish()
await session.stop()
exit(status)
