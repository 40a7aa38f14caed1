import Foundation

extension GatewayConfiguration {
    /// OpenMQTTGateway's `MQTTtoBT/config` keys: `white-list`, `black-list`, `minrssi`,
    /// `interval` (publish interval per device, ms), `activescan`, `onlysensors`, `pubadvdata`
    /// (raw frames to `…/undecoded`), `hasspresence`/`discovery` (Home Assistant discovery).
    package mutating func apply(configCommand command: JSONValue) -> Bool {
        let keys = ["white-list", "black-list", "minrssi", "interval", "onlysensors", "pubadvdata", "discovery", "hasspresence", "activescan"]
        guard keys.contains(where: { command[$0] != nil }) else { return false }
        if case .array(let items)? = command["white-list"] {
            whiteList = Set(items.compactMap { $0.stringValue?.uppercased() })
        }
        if case .array(let items)? = command["black-list"] {
            blackList = Set(items.compactMap { $0.stringValue?.uppercased() })
        }
        if let value = command["minrssi"]?.intValue {
            // OpenMQTTGateway stores the magnitude; both -80 and 80 mean "at least -80 dBm".
            // Clamped first: abs(Int.min) would trap, and no radio reports beyond ±200 dBm.
            minimumRSSI = -abs(min(200, max(-200, value)))
        }
        if let value = command["interval"]?.intValue, value >= 0 {
            publishInterval = .milliseconds(min(value, 86_400_000))
        }
        if let value = command["onlysensors"]?.boolValue { onlySensors = value }
        if let value = command["pubadvdata"]?.boolValue { publishUndecoded = value }
        if let value = command["discovery"]?.boolValue ?? command["hasspresence"]?.boolValue {
            homeAssistantDiscovery = value
        }
        if let value = command["activescan"]?.boolValue {
            activeScan = value
            if !value { GatewayLog.warning("passive scanning needs BlueZ's AdvertisementMonitor API; scanning stays active") }
        }
        return true
    }
}
