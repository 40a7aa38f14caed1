import Foundation

/// What one decoder made of an advertisement: the Theengs model fields (`brand`, `model`,
/// `model_id`, `type`) and the readings, in Theengs' key names (`tempc`, `hum`, `batt`, …).
public struct DecodedAdvertisement: Sendable, Equatable {
    /// `brand`, as Theengs names it (`GENERIC` for standard formats).
    public var brand: String
    /// `model`: the device's model name, as Theengs names it.
    public var model: String
    /// `model_id`.
    public var modelID: String
    /// `type`: `THB` (sensor), `BCON` (beacon), `BATT`, …
    public var type: String
    /// The decoded fields, in order.
    public var fields: [(String, JSONValue)]

    /// A decoding.
    public init(brand: String, model: String, modelID: String, type: String, fields: [(String, JSONValue)]) {
        self.brand = brand
        self.model = model
        self.modelID = modelID
        self.type = type
        self.fields = fields
    }

    /// Compares fields as ordered pairs.
    public static func == (left: DecodedAdvertisement, right: DecodedAdvertisement) -> Bool {
        JSONValue.object(left.jsonPairs) == JSONValue.object(right.jsonPairs)
    }

    /// The model fields then the readings, as they are merged into the published message.
    public var jsonPairs: [(String, JSONValue)] {
        [("brand", .string(brand)), ("model", .string(model)), ("model_id", .string(modelID)), ("type", .string(type))] + fields
    }

    /// Adds a reading, suffixing `_2`, `_3` when the key is already used (BTHome may repeat a kind).
    mutating func add(_ key: String, _ value: JSONValue) {
        var name = key
        var index = 2
        while fields.contains(where: { $0.0 == name }) {
            name = "\(key)_\(index)"
            index += 1
        }
        fields.append((name, value))
    }
}

/// How Home Assistant shows a reading: its unit and device class, for discovery.
public struct MeasurementKind: Sendable, Equatable {
    /// The unit (`°C`, `%`, `V`), or nil.
    public var unit: String?
    /// The Home Assistant device class, or nil.
    public var deviceClass: String?
    /// `binary_sensor` for on/off readings, else `sensor`.
    public var component: String

    /// The kind of the reading named `key` (Theengs' names), nil for fields that are not readings.
    public static func of(_ key: String) -> MeasurementKind? {
        let base = key.split(separator: "_").first.map(String.init) ?? key
        if let known = table[key] ?? table[base] { return known }
        return nil
    }

    private static let table: [String: MeasurementKind] = [
        "tempc": .init(unit: "°C", deviceClass: "temperature", component: "sensor"),
        "hum": .init(unit: "%", deviceClass: "humidity", component: "sensor"),
        "batt": .init(unit: "%", deviceClass: "battery", component: "sensor"),
        "volt": .init(unit: "V", deviceClass: "voltage", component: "sensor"),
        "pres": .init(unit: "hPa", deviceClass: "pressure", component: "sensor"),
        "lux": .init(unit: "lx", deviceClass: "illuminance", component: "sensor"),
        "co2": .init(unit: "ppm", deviceClass: "carbon_dioxide", component: "sensor"),
        "pm25": .init(unit: "µg/m³", deviceClass: "pm25", component: "sensor"),
        "pm10": .init(unit: "µg/m³", deviceClass: "pm10", component: "sensor"),
        "power": .init(unit: "W", deviceClass: "power", component: "sensor"),
        "energy": .init(unit: "kWh", deviceClass: "energy", component: "sensor"),
        "current": .init(unit: "A", deviceClass: "current", component: "sensor"),
        "moist": .init(unit: "%", deviceClass: "moisture", component: "sensor"),
        "dewpoint": .init(unit: "°C", deviceClass: "temperature", component: "sensor"),
        "motion": .init(unit: nil, deviceClass: "motion", component: "binary_sensor"),
        "door": .init(unit: nil, deviceClass: "door", component: "binary_sensor"),
        "window": .init(unit: nil, deviceClass: "window", component: "binary_sensor"),
        "open": .init(unit: nil, deviceClass: "opening", component: "binary_sensor"),
        "occupancy": .init(unit: nil, deviceClass: "occupancy", component: "binary_sensor"),
        "presence": .init(unit: nil, deviceClass: "presence", component: "binary_sensor"),
        "smoke": .init(unit: nil, deviceClass: "smoke", component: "binary_sensor"),
    ]
}
