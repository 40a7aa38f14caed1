import BleCore
// `apply(configCommand:)` and `render(_:)` are package-level (see FuzzTarget.swift).
@testable import BleGateway
import Foundation

/// The gateway's doors: an MQTT command payload and the `--commands` file.
extension FuzzTarget {
    /// The operation command the gateway seeds know, so `{"cmd": "battery"}` reaches a spec.
    static let battery = OperationCommandSpec(name: "battery", service: "fff0", write: "fff1", notify: "fff2", command: "a501",
                                              responseLength: 3, retries: 2,
                                              fields: [.init(key: "batt", offset: 1, size: 1), .init(key: "volt", offset: 1, size: 2, signed: true, scale: 0.1)])

    /// One payload as the gateway takes it from MQTT: JSON, the config keys, then a GATT request;
    /// a parsed request renders the payload's own bytes as a read value of its type.
    static func gatewayCommand(_ data: Data) {
        guard let command = JSONValue.parse(data), case .object = command else { return }
        var configuration = GatewayConfiguration(name: "fuzz", mqtt: MQTTOptions(clientID: "fuzz"))
        // A refused config command changes nothing; an applied one stays within the bounds.
        if (try? configuration.apply(configCommand: command)) == true {
            precondition((-127...0).contains(configuration.minimumRSSI), "a minimum RSSI outside -127…0 dBm")
            precondition(configuration.publishInterval >= .zero && configuration.publishInterval <= .milliseconds(86_400_000),
                         "a publish interval outside 0…24 h")
        }
        guard case .success(let request)? = GattRequest.parse(command, operations: [battery]) else { return }
        precondition((1...GattRequest.maximumAttempts).contains(request.attempts), "attempts outside 1…\(GattRequest.maximumAttempts)")
        precondition(BluetoothUUID(request.serviceUUID.uuidString128) == request.serviceUUID, "a service UUID that does not round-trip")
        switch request.kind {
        case .write(let bytes): precondition(bytes.count <= GattRequest.maximumValueLength, "a write over the attribute's maximum")
        case .read, .operation: break
        }
        _ = request.render(data).data
        _ = request.render(data.prefix(3)).data
    }

    /// A `--commands` file: every spec checked, then a response (the file's own bytes) parsed by each.
    static func operationCommands(_ data: Data) {
        guard let json = JSONValue.parse(data), let specs = try? OperationCommandSpec.parse(json) else { return }
        for spec in specs {
            precondition((try? spec.validated(at: "")) != nil, "a loaded spec that its own check refuses")
            let response = data.prefix(spec.responseLength)
            let fields = spec.parse(response)
            precondition(fields.count <= max(1, spec.fields?.count ?? 0), "more fields than the spec names")
            _ = JSONValue.object(fields).data
        }
    }

    static var gatewayCommandSeeds: [Data] {
        [
            #"{"ble_write_address": "C0:FF:EE:00:00:01", "ble_write_service": "180d", "ble_write_char": "2a39", "ble_write_value": "0102", "value_type": "HEX", "ttl": 3}"#,
            #"{"ble_write_address": "C0:FF:EE:00:00:01", "ble_write_service": "180d", "ble_write_char": "2a39", "ble_write_value": -5, "value_type": "INT"}"#,
            #"{"ble_write_address": "C0:FF:EE:00:00:01", "ble_write_service": "180d", "ble_write_char": "2a39", "ble_write_value": 1.5e3, "value_type": "FLOAT"}"#,
            #"{"ble_read_address": "C0:FF:EE:00:00:01", "ble_read_service": "0000180f-0000-1000-8000-00805f9b34fb", "ble_read_char": "2a19", "value_type": "INT"}"#,
            #"{"cmd": "battery", "id": "C0:FF:EE:00:00:01"}"#,
            #"{"white-list": ["c0:ff:ee:00:00:01"], "black-list": [], "minrssi": -9223372036854775808, "interval": 1e30, "onlysensors": true, "activescan": false}"#,
        ].map { Data($0.utf8) }
    }

    static var operationCommandSeeds: [Data] {
        [
            #"{"commands": [{"name": "battery", "service": "0000fff0-0000-1000-8000-00805f9b34fb", "write": "fff1", "notify": "fff2", "command": "a501", "responseLength": 3, "timeout": 5, "retries": 2, "fields": [{"key": "batt", "offset": 1, "size": 1}, {"key": "volt", "offset": 1, "size": 2, "scale": 0.1, "signed": true, "bigEndian": true}]}]}"#,
            #"[{"name": "raw", "service": "fff0", "write": "fff1", "notify": "fff2", "command": "00", "responseLength": 1}]"#,
        ].map { Data($0.utf8) }
    }
}
