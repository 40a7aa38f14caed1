import BleDBus
import BlueZVocabulary

/// The option dictionaries of BlueZ's GATT calls (`ReadValue`, `WriteValue`, `Acquire…`),
/// built once: each was an array, a map and a boxed variant per call, on every write.
enum GattOptions {
    private typealias Option = BlueZ.GattCharacteristic1.Option
    private typealias WriteType = BlueZ.GattCharacteristic1.WriteType

    /// `{}`: no options.
    static let none = BlueZShapes.propertyDictionary([])
    /// `{"type": "request"}`: a write with response.
    static let request = BlueZShapes.propertyDictionary([(Option.type, .string(WriteType.request))])
    /// `{"type": "reliable"}`: a reliable (prepared) write.
    static let reliable = BlueZShapes.propertyDictionary([(Option.type, .string(WriteType.reliable))])
    /// `{"type": "command"}`: a write without response.
    static let command = BlueZShapes.propertyDictionary([(Option.type, .string(WriteType.command))])
}
