/// What is wrong with a scenario file, and where: the reason `Scenario.LoadError.invalid` gives.
///
/// Every case names the place (`peripherals[2].services[0].characteristics[1].flags`), so that
/// a test author's peer is refused at load instead of quietly being another peer than the one
/// they wrote. `description` is a message a person can act on.
public enum ScenarioProblem: Error, Sendable, Equatable, CustomStringConvertible {
    /// The object at `path` has a key it does not read: a typo, or a key of another kind of object.
    /// `accepted` are the keys read at that place; `suggestion` is the closest of them, if any is close.
    case unknownKey(path: ScenarioPath, key: String, accepted: [String], suggestion: String?)
    /// The value at `path` is of another JSON type than `expected` (`found` says what it is).
    case wrongType(path: ScenarioPath, expected: String, found: String)
    /// The number at `path` lies outside `range` (in `unit`: `ms`, `s`, `dBm`, or empty for counts).
    case outOfRange(path: ScenarioPath, value: Double, range: ClosedRange<Double>, unit: String)
    /// The object at `path` lacks the required `key`.
    case missingKey(path: ScenarioPath, key: String)
    /// The object at `path` must hold one of `oneOf` (the key that says what it is) and holds none.
    case missingChoice(path: ScenarioPath, oneOf: [String])
    /// The object at `path` holds `keys`, which exclude each other (a fault that is both a
    /// connect failure and a link loss): only one of them can say what the object is.
    case conflictingKeys(path: ScenarioPath, keys: [String])
    /// The name at `path` is none of `accepted` (a characteristic flag, a connect failure);
    /// `suggestion` is the closest accepted name, if any is close.
    case unknownValue(path: ScenarioPath, value: String, accepted: [String], suggestion: String?)
    /// The value at `path` has the right type but cannot be used (an address, hex bytes, a UUID):
    /// `reason` says what it should look like.
    case invalidValue(path: ScenarioPath, value: String, reason: String)

    /// Where the problem is.
    public var path: ScenarioPath {
        switch self {
        case .unknownKey(let path, _, _, _), .wrongType(let path, _, _), .outOfRange(let path, _, _, _),
             .missingKey(let path, _), .missingChoice(let path, _), .conflictingKeys(let path, _),
             .unknownValue(let path, _, _, _), .invalidValue(let path, _, _):
            return path
        }
    }

    /// `peripherals[0]: unknown key 'rsi'; did you mean 'rssi'? …`: the place, what is wrong, what to write instead.
    public var description: String { "\(path): \(reason)" }

    /// The message without the place.
    public var reason: String {
        switch self {
        case .unknownKey(_, let key, let accepted, let suggestion):
            return "unknown key '\(key)'\(Self.didYouMean(suggestion)); the keys accepted here are \(Self.list(accepted, conjunction: "and"))"
        case .wrongType(_, let expected, let found):
            return "expected \(expected), found \(found)"
        case .outOfRange(_, let value, let range, let unit):
            let suffix = unit.isEmpty ? "" : " \(unit)"
            return "\(Self.number(value))\(suffix) is out of range; use \(Self.number(range.lowerBound))…\(Self.number(range.upperBound))\(suffix)"
        case .missingKey(_, let key):
            return "missing key '\(key)', which is required here"
        case .missingChoice(_, let keys):
            return "needs one of \(Self.list(keys)) to say what it is"
        case .conflictingKeys(_, let keys):
            return "\(Self.list(keys, conjunction: "and")) exclude each other; write each in an object of its own"
        case .unknownValue(_, let value, let accepted, let suggestion):
            return "unknown value '\(value)'\(Self.didYouMean(suggestion)); use one of \(Self.list(accepted))"
        case .invalidValue(_, _, let reason):
            return reason
        }
    }

    /// The candidate a person most likely meant by `word`: the same ignoring case, at most a
    /// couple of typing slips away, or a longer or shorter form of it (`temporaryTimeoutSeconds`
    /// for `temporaryTimeout`); nil when none is that close.
    static func closest(to word: String, among candidates: [String]) -> String? {
        let typed = Array(word.lowercased())
        var best: (candidate: String, distance: Int)?
        for candidate in candidates {
            let known = Array(candidate.lowercased())
            var distance = editDistance(typed, known)
            let shorter = min(typed.count, known.count)
            if shorter >= 4, typed.starts(with: known) || known.starts(with: typed) { distance = min(distance, 1) }
            let allowed = max(1, min(3, known.count / 3))
            guard distance <= allowed else { continue }
            if best.map({ distance < $0.distance }) ?? true { best = (candidate, distance) }
        }
        return best?.candidate
    }

    /// Levenshtein distance, an adjacent swap counting as one slip.
    private static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var before = [Int](0...b.count)
        var previous = before
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                current[j] = Swift.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    current[j] = Swift.min(current[j], before[j - 2] + 1)
                }
            }
            before = previous
            previous = current
        }
        return previous[b.count]
    }

    private static func didYouMean(_ suggestion: String?) -> String {
        suggestion.map { " (did you mean '\($0)'?)" } ?? ""
    }

    private static func list(_ words: [String], conjunction: String = "or") -> String {
        let quoted = words.map { "'\($0)'" }
        guard quoted.count > 1 else { return quoted.first ?? "nothing" }
        return quoted.dropLast().joined(separator: ", ") + " \(conjunction) " + quoted[quoted.count - 1]
    }

    /// `20`, `7.5`, `1e+300`: whole numbers without a trailing `.0`.
    static func number(_ value: Double) -> String {
        if value.isFinite, value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }
}
