import Foundation

/// Home Assistant MQTT discovery for decoded devices: one retained
/// `homeassistant/<component>/<MAC>-<key>/config` per reading, its state read from the device's
/// `BTtoMQTT` topic with a value template, the device linked to the gateway with `via_device`,
/// availability following the gateway's LWT. Each entity is announced once per gateway run.
struct HomeAssistantDiscovery {
    private var announced: Set<String> = []
    private var gatewayAnnounced = false

    /// The gateway's own entity, so `via_device` names a device Home Assistant knows.
    mutating func gatewayConfig(_ configuration: GatewayConfiguration) -> (topic: String, payload: JSONValue)? {
        guard !gatewayAnnounced else { return nil }
        gatewayAnnounced = true
        let id = "\(configuration.name)-connectivity"
        let payload: JSONValue = .object([
            ("name", .string("\(configuration.name) connectivity")),
            ("uniq_id", .string(id)),
            ("stat_t", .string(configuration.availabilityTopic)),
            ("dev_cla", .string("connectivity")),
            ("pl_on", .string("online")),
            ("pl_off", .string("offline")),
            ("dev", .object([("ids", .array([.string(configuration.name)])), ("name", .string(configuration.name)),
                             ("mf", .string("BleKit")), ("mdl", .string("blekit gateway"))])),
        ])
        return ("\(configuration.discoveryPrefix)/binary_sensor/\(id)/config", payload)
    }

    /// The configs not yet announced for `message`'s readings.
    mutating func configs(for message: AdvertisementMessage, _ configuration: GatewayConfiguration) -> [(topic: String, payload: JSONValue)] {
        guard let decoded = message.decoded else { return [] }
        var result: [(String, JSONValue)] = []
        for (key, _) in decoded.fields {
            guard let kind = MeasurementKind.of(key) else { continue }
            let id = "\(message.topicID)-\(key)"
            guard announced.insert(id).inserted else { continue }
            var pairs: [(String, JSONValue)] = [
                ("name", .string(key)),
                ("uniq_id", .string(id)),
                ("stat_t", .string("\(configuration.advertisementTopic)/\(message.topicID)")),
                ("val_tpl", .string(kind.component == "binary_sensor"
                    ? "{{ 'ON' if value_json.\(key) else 'OFF' }}" : "{{ value_json.\(key) | is_defined }}")),
            ]
            if let deviceClass = kind.deviceClass { pairs.append(("dev_cla", .string(deviceClass))) }
            if let unit = kind.unit {
                pairs.append(("unit_of_meas", .string(unit)))
                pairs.append(("stat_cla", .string("measurement")))
            }
            pairs.append(("avty_t", .string(configuration.availabilityTopic)))
            pairs.append(("dev", .object([
                ("ids", .array([.string(message.topicID)])),
                ("cns", .array([.array([.string("mac"), .string(message.address)])])),
                ("mf", .string(decoded.brand)),
                ("mdl", .string(decoded.model)),
                ("name", .string("\(decoded.modelID)-\(message.topicID.suffix(6))")),
                ("via_device", .string(configuration.name)),
            ])))
            result.append(("\(configuration.discoveryPrefix)/\(kind.component)/\(id)/config", .object(pairs)))
        }
        return result
    }
}
