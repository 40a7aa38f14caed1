import Foundation

/// The simulated peripheral every client talks to, built for the run's burst sizes.
///
/// Service ff00 has a writable ff01 and a notifying ff02. Rules, first match wins: a write
/// starting 0xff pushes `burst` 4-byte notifications on ff02, one starting 0xfe pushes
/// `warmupBurst`, any other write is echoed on ff02 as one notification. Timing scale 0: the
/// simulator answers as fast as the bus carries, so only software cost is measured.
enum BenchmarkScenario {
    static let address = "C0:FF:EE:00:00:10"
    static let adapterPath = "/org/bluez/hci0"
    static let devicePath = "/org/bluez/hci0/dev_C0_FF_EE_00_00_10"
    static let serviceUUID = "0000ff00-0000-1000-8000-00805f9b34fb"
    static let writeUUID = "0000ff01-0000-1000-8000-00805f9b34fb"
    static let notifyUUID = "0000ff02-0000-1000-8000-00805f9b34fb"

    static func json(burst: Int, warmupBurst: Int) -> String {
        func burstRule(prefix: String, count: Int) -> String {
            // `packets` splits the value into `count` notifications of 4 bytes each.
            """
            {"on": {"write": "\(writeUUID)", "prefix": "\(prefix)"},
             "then": [{"notify": "\(notifyUUID)", "value": "\(String(repeating: "a1b2c3d4", count: max(1, count)))", "packets": \(max(1, count))}]}
            """
        }
        return """
        {
          "timing": {"scale": 0},
          "peripherals": [
            {
              "address": "\(address)",
              "name": "RoundTrip",
              "rssi": -50,
              "advertisingInterval": 20,
              "serviceUUIDs": ["\(serviceUUID)"],
              "services": [
                {
                  "uuid": "\(serviceUUID)",
                  "characteristics": [
                    {"uuid": "\(writeUUID)", "flags": ["read", "write"], "value": "00"},
                    {"uuid": "\(notifyUUID)", "flags": ["read", "notify"], "value": "00"}
                  ]
                }
              ],
              "rules": [
                \(burstRule(prefix: "ff", count: burst)),
                \(burstRule(prefix: "fe", count: warmupBurst)),
                {"on": {"write": "\(writeUUID)"}, "then": [{"echo": "\(notifyUUID)"}]}
              ]
            }
          ]
        }
        """
    }
}
