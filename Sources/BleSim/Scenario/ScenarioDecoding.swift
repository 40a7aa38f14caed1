import BlueZVocabulary
import Foundation

/// How the scenario types read their JSON: every object refuses keys it does not read, and every
/// number, name and address is checked where it is read, throwing a `ScenarioProblem` that names
/// the place. JSONDecoder alone ignores unknown keys, which is how a misspelled key used to load
/// silently.
extension Decoder {
    /// The object here, after refusing every key that is not one of `Key`.
    func scenarioObject<Key: CodingKey & CaseIterable>(_ type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        try refuseUnknownKeys(accepting: Key.allCases.map(\.stringValue))
        return try container(keyedBy: Key.self)
    }

    /// Refuses the first key (in alphabetical order, so the error is the same on every run) that
    /// is not in `accepted`, naming the accepted ones and the closest of them.
    func refuseUnknownKeys(accepting accepted: [String]) throws {
        let object = try container(keyedBy: ScenarioKey.self)
        let unknown = object.allKeys.map(\.stringValue).filter { !accepted.contains($0) }.sorted()
        guard let key = unknown.first else { return }
        throw ScenarioProblem.unknownKey(path: ScenarioPath(codingPath).appending(key), key: key, accepted: accepted,
                                         suggestion: ScenarioProblem.closest(to: key, among: accepted))
    }

    /// The one key of `choices` this object holds, which says what kind of object it is (a
    /// fault's `connect` or `linkLoss`). With none, an unknown key is reported first (most often
    /// the choice misspelled), against `accepted`, every key any kind reads.
    func scenarioChoice<Key: CodingKey & CaseIterable & Equatable>(_ choices: [Key], accepted: [Key] = Array(Key.allCases)) throws -> Key {
        let object = try container(keyedBy: Key.self)
        let present = choices.filter(object.contains)
        if present.count > 1 {
            throw ScenarioProblem.conflictingKeys(path: ScenarioPath(codingPath), keys: present.map(\.stringValue))
        }
        guard let choice = present.first else {
            try refuseUnknownKeys(accepting: accepted.map(\.stringValue))
            throw ScenarioProblem.missingChoice(path: ScenarioPath(codingPath), oneOf: choices.map(\.stringValue))
        }
        return choice
    }
}

extension KeyedDecodingContainer {
    /// The path of `key` in this container.
    func path(_ key: Key) -> ScenarioPath { ScenarioPath(codingPath).appending(key.stringValue) }

    /// A number within `limit`, or nil when the key is absent (or null).
    func number(_ key: Key, _ limit: ScenarioLimit) throws -> Double? {
        guard let value = try decodeIfPresent(Double.self, forKey: key) else { return nil }
        guard limit.range.contains(value) else {
            throw ScenarioProblem.outOfRange(path: path(key), value: value, range: limit.range, unit: limit.unit)
        }
        return value
    }

    /// A whole number within `limit`, as `T`, or nil when the key is absent. Read through
    /// `Double` so that 1e300 and 100.5 are errors that name the field: JSONDecoder reports a
    /// number that does not fit an integer type as malformed JSON at the top level.
    func integer<T: FixedWidthInteger>(_ type: T.Type, _ key: Key, _ limit: ScenarioLimit) throws -> T? {
        guard let value = try decodeIfPresent(Double.self, forKey: key) else { return nil }
        guard value.isFinite, value == value.rounded() else {
            throw ScenarioProblem.wrongType(path: path(key), expected: "a whole number", found: "the number \(ScenarioProblem.number(value))")
        }
        guard limit.range.contains(value), let exact = T(exactly: value) else {
            throw ScenarioProblem.outOfRange(path: path(key), value: value, range: limit.range, unit: limit.unit)
        }
        return exact
    }

    /// One of `Value`'s names, or nil when the key is absent; another name is refused with the
    /// accepted ones and the closest of them.
    func name<Value: RawRepresentable & CaseIterable>(_ type: Value.Type, _ key: Key) throws -> Value? where Value.RawValue == String {
        guard let text = try decodeIfPresent(String.self, forKey: key) else { return nil }
        guard let value = Value(rawValue: text) else {
            let accepted = Value.allCases.map(\.rawValue)
            throw ScenarioProblem.unknownValue(path: path(key), value: text, accepted: accepted,
                                               suggestion: ScenarioProblem.closest(to: text, among: accepted))
        }
        return value
    }

    /// A device address (`AA:BB:CC:DD:EE:FF`, any case), upper-cased.
    func address(_ key: Key) throws -> String {
        let text = try decode(String.self, forKey: key)
        guard SimAddress.isValid(text) else {
            throw ScenarioProblem.invalidValue(path: path(key), value: text, reason: "'\(text)' is not an address like AA:BB:CC:DD:EE:FF")
        }
        return text.uppercased()
    }

    /// A UUID in any of its forms, as bluetoothd's lower-case 128-bit text.
    func uuid(_ key: Key) throws -> String {
        let text = try decode(String.self, forKey: key)
        guard let full = SimUUID.full(text) else {
            throw ScenarioProblem.invalidValue(path: path(key), value: text,
                                               reason: "'\(text)' is not a UUID (use 180d, 0000180d-…, or a 128-bit UUID)")
        }
        return full
    }

    /// BlueZ flag names (`read` when absent); one bluetoothd does not know is refused, with the
    /// closest known one.
    func flags(_ key: Key) throws -> [String] {
        guard let flags = try decodeIfPresent([String].self, forKey: key) else { return [BlueZ.GattFlag.read] }
        for (index, flag) in flags.enumerated() where !CharacteristicSpec.knownFlags.contains(flag) {
            throw ScenarioProblem.unknownValue(path: path(key).appending(index), value: flag, accepted: BlueZ.GattFlag.all,
                                               suggestion: ScenarioProblem.closest(to: flag, among: BlueZ.GattFlag.all))
        }
        return flags
    }

    /// An attribute's value (empty when absent): hex bytes, at most ATT's 512.
    func attributeValue(_ key: Key) throws -> Data {
        let value = try decodeIfPresent(HexData.self, forKey: key)?.data ?? Data()
        guard value.count <= 512 else {
            throw ScenarioProblem.invalidValue(path: path(key), value: "\(value.count) bytes",
                                               reason: "an attribute value holds at most 512 bytes, this one \(value.count)")
        }
        return value
    }

    /// `true`, for a key whose presence says what the object is (`{"accessDenied": true}`):
    /// `false` would read as "not this", which an object of that kind cannot be.
    func marker(_ key: Key) throws {
        guard try decode(Bool.self, forKey: key) else {
            throw ScenarioProblem.invalidValue(path: path(key), value: "false",
                                               reason: "'\(key.stringValue)' can only be true here; leave the object out instead")
        }
    }
}
