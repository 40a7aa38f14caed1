import BleDBus
import Foundation

/// The options bluetoothd passes with `ReadValue`, `WriteValue`, `AcquireWrite` and
/// `AcquireNotify` on a served attribute (`{device, offset, mtu, link, type,
/// prepare-authorize}`), checked as bluetoothd checks its own: a known key with the wrong type
/// refuses the call with `org.bluez.Error.InvalidArguments` rather than being read as absent
/// (an offset of 0 for a `"offset": <string>` would answer the wrong bytes). Unknown keys are
/// ignored, as bluetoothd ignores them, so a later BlueZ may add some.
package struct RequestOptions: Equatable, Sendable {
    /// The `Device1` of the central, as bluetoothd names it.
    package var device: ObjectPath?
    /// Where the access starts.
    package var offset = 0
    /// The link's ATT MTU, clamped to `mtuRange`; nil when bluetoothd did not say.
    package var mtu: Int?
    /// The bearer (`LE`, `BR/EDR`).
    package var link = BlueZ.GattCharacteristic1.Link.le
    /// A write's kind (`command`, `request`, `reliable`), when said.
    package var type: String?
    /// A prepared write asking for authorization.
    package var prepareAuthorize = false

    /// The ATT MTUs bluetoothd can have: 23 (ATT's minimum, `BT_ATT_DEFAULT_LE_MTU`) to 517
    /// (`BT_ATT_MAX_LE_MTU`). A value outside comes from something that is not bluetoothd.
    package static let mtuRange = 23...517

    /// Why options were refused.
    package enum Problem: Error, Equatable, CustomStringConvertible {
        /// The options argument is not an `a{sv}`.
        case notADictionary(String)
        /// A known key holds a value of another type.
        case wrongType(key: String, expected: String, found: String)

        /// What was wrong, for the log.
        package var description: String {
            switch self {
            case .notADictionary(let found): return "options of type \(found), not a{sv}"
            case .wrongType(let key, let expected, let found): return "option \"\(key)\" of type \(found), not \(expected)"
            }
        }
    }

    /// Reads the options argument; keys compare without case, as bluetoothd's `strcasecmp`.
    package static func parse(_ value: DBusValue?) -> Result<RequestOptions, Problem> {
        var options = RequestOptions()
        guard let value else { return .success(options) }
        guard case .dictionary(.string, .variant, let entries) = value else { return .failure(.notADictionary(value.type.signature)) }
        for entry in entries {
            guard case .string(let rawKey) = entry.key, case .variant(let inner) = entry.value else { continue }
            typealias Key = BlueZ.GattCharacteristic1.Option
            let key = rawKey.lowercased()
            func wrong(_ expected: String) -> Result<RequestOptions, Problem> {
                .failure(.wrongType(key: rawKey, expected: expected, found: inner.type.signature))
            }
            switch key {
            case Key.device:
                guard case .objectPath(let path) = inner else { return wrong("o") }
                options.device = path
            case Key.offset:
                guard case .uint16(let raw) = inner else { return wrong("q") }
                options.offset = Int(raw)
            case Key.mtu:
                guard case .uint16(let raw) = inner else { return wrong("q") }
                options.mtu = clampedMTU(Int(raw))
            case Key.link:
                guard case .string(let text) = inner else { return wrong("s") }
                options.link = text
            case Key.type:
                guard case .string(let text) = inner else { return wrong("s") }
                options.type = text
            case Key.prepareAuthorize:
                guard case .boolean(let flag) = inner else { return wrong("b") }
                options.prepareAuthorize = flag
            default:
                continue
            }
        }
        return .success(options)
    }

    /// `mtu` inside `mtuRange`: only a daemon that is not bluetoothd (or a broken one) sends
    /// one outside, and a central's `maximumUpdateValueLength` or a socket's record size must
    /// not follow it.
    package static func clampedMTU(_ mtu: Int) -> Int {
        min(max(mtu, mtuRange.lowerBound), mtuRange.upperBound)
    }
}
