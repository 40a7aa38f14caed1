/// Where a value sits in a scenario file: `peripherals[2].services[0].characteristics[1].flags`.
///
/// A problem found while loading a scenario carries one, so that the person who wrote the file
/// finds the place without counting brackets.
public struct ScenarioPath: Sendable, Equatable, Hashable, CustomStringConvertible {
    /// One step from the top-level object down.
    public enum Component: Sendable, Equatable, Hashable {
        /// A key of an object.
        case key(String)
        /// A position in a list, from 0.
        case index(Int)
    }

    /// The steps, outermost first; empty for the top-level object.
    public var components: [Component]

    /// A path made of `components`.
    public init(_ components: [Component] = []) { self.components = components }

    /// The path of a decoder's position, as JSONDecoder reports it.
    init(_ codingPath: [CodingKey]) {
        components = codingPath.map { key in key.intValue.map(Component.index) ?? .key(key.stringValue) }
    }

    /// This path with `key` appended.
    public func appending(_ key: String) -> ScenarioPath { ScenarioPath(components + [.key(key)]) }

    /// This path with `index` appended.
    public func appending(_ index: Int) -> ScenarioPath { ScenarioPath(components + [.index(index)]) }

    /// `peripherals[0].rssi`, or `top level` for the root object.
    public var description: String {
        guard !components.isEmpty else { return "top level" }
        var text = ""
        for component in components {
            switch component {
            case .key(let key): text += text.isEmpty ? key : ".\(key)"
            case .index(let index): text += "[\(index)]"
            }
        }
        return text
    }

    /// The path as coding keys, for `JSONLocator`.
    var codingKeys: [CodingKey] {
        components.map { component -> CodingKey in
            switch component {
            case .key(let key): return ScenarioKey(key)
            case .index(let index): return ScenarioKey(index: index)
            }
        }
    }
}

/// Any key of a JSON object (or a list position): what a scenario object is read with before its
/// own keys are checked against the ones it accepts.
struct ScenarioKey: CodingKey {
    let stringValue: String
    let intValue: Int?

    init(_ key: String) {
        stringValue = key
        intValue = nil
    }

    init(index: Int) {
        stringValue = "Index \(index)"
        intValue = index
    }

    init?(stringValue: String) { self.init(stringValue) }

    init?(intValue: Int) { self.init(index: intValue) }
}
