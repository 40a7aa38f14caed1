import Foundation

extension GatewayConfiguration {
    /// The `MQTTtoBT/config` keys the gateway reads.
    package static let configCommandKeys = ["white-list", "black-list", "minrssi", "interval", "onlysensors", "pubadvdata",
                                            "discovery", "hasspresence", "activescan"]

    /// The members any command on the command topic may hold: the config keys, the GATT
    /// requests' and the operation commands'. A command with none of them does nothing.
    package static let commandKeys = configCommandKeys + ["ble_write_address", "ble_write_service", "ble_write_char", "ble_write_value",
                                                          "ble_read_address", "ble_read_service", "ble_read_char", "value_type", "ttl",
                                                          "cmd", "id"]

    /// The minimum RSSI a config command may give: OpenMQTTGateway takes the magnitude, so
    /// both -80 and 80 mean "at least -80 dBm"; no radio reports past -127 dBm.
    package static let configRSSIRange = -127...127

    /// The longest per-device interval a config command may give: a day, in milliseconds.
    package static let maximumIntervalMilliseconds = 86_400_000

    /// True for `AA:BB:CC:DD:EE:FF` (either case): what the lists hold (`--white-list`, `white-list`).
    package static func isAddress(_ text: String) -> Bool { JSONFields.isAddress(text) }

    /// OpenMQTTGateway's `MQTTtoBT/config` keys: `white-list`, `black-list`, `minrssi`,
    /// `interval` (publish interval per device, ms), `activescan`, `onlysensors`, `pubadvdata`
    /// (raw frames to `…/undecoded`), `hasspresence`/`discovery` (Home Assistant discovery).
    ///
    /// Returns false when the command holds none of them. Every member is checked before any is
    /// applied, and a bad one (a list entry that is no address, `"minrssi": "loud"`, a negative
    /// interval) is refused with its path: it used to be skipped or clamped without a word,
    /// and a misspelt address in `white-list` filtered out every device.
    package mutating func apply(configCommand command: JSONValue) throws(CommandError) -> Bool {
        guard Self.configCommandKeys.contains(where: { command[$0] != nil }) else { return false }
        let fields = try JSONFields(command)
        let whiteList = try Self.addressList(fields, "white-list")
        let blackList = try Self.addressList(fields, "black-list")
        let minimumRSSI = try fields.integer("minrssi", in: Self.configRSSIRange)
        let interval = try fields.integer("interval", in: 0...Self.maximumIntervalMilliseconds)
        let onlySensors = try fields.bool("onlysensors")
        let publishUndecoded = try fields.bool("pubadvdata")
        let discovery = try fields.bool("discovery")
        let presence = try fields.bool("hasspresence")
        let activeScan = try fields.bool("activescan")

        if let whiteList { self.whiteList = whiteList }
        if let blackList { self.blackList = blackList }
        if let minimumRSSI { self.minimumRSSI = -abs(minimumRSSI) }
        if let interval { publishInterval = .milliseconds(interval) }
        if let onlySensors { self.onlySensors = onlySensors }
        if let publishUndecoded { self.publishUndecoded = publishUndecoded }
        if let value = discovery ?? presence { homeAssistantDiscovery = value }
        if let activeScan {
            self.activeScan = activeScan
            if !activeScan { GatewayLog.warning("passive scanning needs BlueZ's AdvertisementMonitor API; scanning stays active") }
        }
        return true
    }

    /// A list of addresses, upper-cased; nil when absent.
    private static func addressList(_ fields: JSONFields, _ key: String) throws(CommandError) -> Set<String>? {
        guard let member = fields.value[key] else { return nil }
        guard case .array(let items) = member else {
            throw .invalidField(path: key, reason: "must be an array of addresses such as [\"AA:BB:CC:DD:EE:FF\"], not \(member.kind)")
        }
        var addresses = Set<String>()
        for (index, item) in items.enumerated() {
            guard let text = item.stringValue, JSONFields.isAddress(text) else {
                let shown = item.stringValue.map { "'\($0.prefix(64))'" } ?? item.kind
                throw .invalidField(path: "\(key)[\(index)]", reason: "\(shown) is not a Bluetooth address: write six hex pairs, AA:BB:CC:DD:EE:FF")
            }
            addresses.insert(text.uppercased())
        }
        return addresses
    }

    /// The refusal of a command that holds no member the gateway reads (`{"minrsi": -80}`):
    /// without it a misspelt command did nothing and nobody was told.
    /// On a fleet's topic, which takes only requests, a setting is refused with where it goes.
    package static func unrecognized(_ command: JSONValue, onFleetTopic: Bool = false) -> CommandError {
        guard case .object(let pairs) = command else { return .notAnObject(path: "") }
        guard let key = pairs.map(\.0).sorted().first else {
            return .invalidField(path: "", reason: "the command is empty; it holds one of \(configCommandKeys.joined(separator: ", ")), "
                                 + "or ble_read_address, ble_write_address or cmd")
        }
        if onFleetTopic, let setting = pairs.map(\.0).sorted().first(where: configCommandKeys.contains) {
            return .invalidField(path: setting, reason: "settings go to each gateway's own topic (home/NAME/commands/MQTTtoBT/config); "
                                 + "the fleet's topic takes ble_read_address, ble_write_address or cmd")
        }
        let closest = commandKeys.min { distance(key, $0) < distance(key, $1) }
        let hint = closest.flatMap { distance(key, $0) <= max(2, key.count / 3) ? " (did you mean '\($0)'?)" : nil } ?? ""
        return .invalidField(path: key, reason: "is not a member the gateway reads\(hint); a command holds one of \(configCommandKeys.joined(separator: ", ")), "
                             + "or ble_read_address, ble_write_address or cmd")
    }

    /// Levenshtein distance, for the suggestion.
    private static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a.lowercased()), b = Array(b.lowercased())
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}
