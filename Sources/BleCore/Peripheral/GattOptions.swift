import BleDBus

/// The option dictionaries of BlueZ's GATT calls (`ReadValue`, `WriteValue`, `Acquire…`),
/// built once: each was an array, a map and a boxed variant per call, on every write.
enum GattOptions {
    /// `{}`: no options.
    static let none = BlueZShapes.propertyDictionary([])
    /// `{"type": "request"}`: a write with response.
    static let request = BlueZShapes.propertyDictionary([("type", .string("request"))])
    /// `{"type": "reliable"}`: a reliable (prepared) write.
    static let reliable = BlueZShapes.propertyDictionary([("type", .string("reliable"))])
    /// `{"type": "command"}`: a write without response.
    static let command = BlueZShapes.propertyDictionary([("type", .string("command"))])
}
