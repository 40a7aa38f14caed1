/// The simulated room: 150 beacons, a look-alike FFE0 device the README's filter must drop,
/// and "MyDevice-01" speaking the README's protocol (AA → one packet, BB → three, CC → a stream).
enum DeviceManagerScenario {
    static let address = "C0:FF:EE:00:FF:E0"

    /// BleSim's scenario JSON; `fault` breaks it on purpose (see `--sim-fault`).
    static func json(fault: String) -> String {
        let name = fault == "no-device" ? "Stranger-01" : "MyDevice-01"
        let multiPacket = fault == "no-multi-packet" ? "" : """
            {"on": {"write": "ffe1", "prefix": "bb"}, "then": [{"notify": "ffe2", "value": "bb011011"}, {"notify": "ffe2", "value": "bb022021"}, {"notify": "ffe2", "value": "bb033031"}]},
            """
        return """
        {"crowd": {"count": 150, "addressPrefix": "DE:AD:BE:EF", "namePrefix": "beacon-", "interval": 200, "rssi": -75, "rssiJitter": 8},
         "peripherals": [
          {"address": "C0:FF:EE:00:FF:E1", "name": "OtherVendor-7", "rssi": -60, "serviceUUIDs": ["ffe0"],
           "services": [{"uuid": "ffe0", "characteristics": [{"uuid": "ffe1", "flags": ["write"]}, {"uuid": "ffe2", "flags": ["notify"]}]}]},
          {"address": "\(address)", "name": "\(name)", "rssi": -50, "serviceUUIDs": ["ffe0"], "mtu": 185,
           "services": [{"uuid": "ffe0", "characteristics": [{"uuid": "ffe1", "flags": ["write", "write-without-response"]}, {"uuid": "ffe2", "flags": ["notify"]}]}],
           "rules": [
            {"on": {"write": "ffe1", "prefix": "aa"}, "then": [{"notify": "ffe2", "value": "aa010055"}]},
            \(multiPacket)
            {"on": {"write": "ffe1", "prefix": "cc"}, "then": [{"notify": "ffe2", "value": "cc030001"}]},
            {"on": {"every": 150}, "then": [{"notify": "ffe2", "value": "cc030002"}]}
           ]}
         ]}
        """
    }
}
