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
    /// The multi-packet peripherals: service ff10 at MTU 23, ff20 at MTU 517; any write on the
    /// first characteristic (ff11, ff21) is answered by `multiPacketBytes` on the second
    /// (ff12, ff22), in MTU − 3 packets.
    static let multiPacketBytes = 65_536

    static func multiPacketUUID(_ short: UInt16) -> String { String(format: "0000%04x-0000-1000-8000-00805f9b34fb", short) }

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
            },
            \(multiPacketPeripheral(mtu: 23, base: 0xff10, address: "C0:FF:EE:00:00:11")),
            \(multiPacketPeripheral(mtu: 517, base: 0xff20, address: "C0:FF:EE:00:00:12"))
          ]
        }
        """
    }

    private static func multiPacketPeripheral(mtu: Int, base: UInt16, address: String) -> String {
        let value = String(repeating: "5a", count: multiPacketBytes)
        return """
        {
          "address": "\(address)", "name": "MultiPacket\(mtu)", "rssi": -50, "advertisingInterval": 20, "mtu": \(mtu),
          "serviceUUIDs": ["\(multiPacketUUID(base))"],
          "services": [{"uuid": "\(multiPacketUUID(base))", "characteristics": [
            {"uuid": "\(multiPacketUUID(base + 1))", "flags": ["read", "write"], "value": "00"},
            {"uuid": "\(multiPacketUUID(base + 2))", "flags": ["read", "notify"], "value": "00"}]}],
          "rules": [{"on": {"write": "\(multiPacketUUID(base + 1))"}, "then": [{"notify": "\(multiPacketUUID(base + 2))", "value": "\(value)"}]}]
        }
        """
    }
}
