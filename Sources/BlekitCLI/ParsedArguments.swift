/// A command line split into options and positional arguments, checked against the specs.
package struct ParsedArguments: Sendable {
    /// Why a command line was refused.
    package struct UsageError: Error, CustomStringConvertible {
        /// What is wrong and what to give instead.
        package let description: String

        /// A refusal saying `description`.
        package init(description: String) { self.description = description }
    }

    /// The positional arguments, in order.
    package private(set) var positionals: [String] = []
    /// Options by their main spelling: the value, or "" for a flag.
    package private(set) var values: [String: String] = [:]
    /// Options given more than once, in order (`--filter a --filter b`).
    package private(set) var repeated: [String: [String]] = [:]

    /// Parses `arguments` against `specs`; `--` ends the options.
    package init(_ arguments: [String], specs: [OptionSpec]) throws(UsageError) {
        var index = 0
        var optionsEnded = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if optionsEnded || !argument.hasPrefix("-") || argument == "-" || Self.isNegativeNumber(argument) {
                positionals.append(argument)
                continue
            }
            if argument == "--" { optionsEnded = true; continue }
            var name = argument
            var inline: String?
            if let equals = argument.firstIndex(of: "="), argument.hasPrefix("--") {
                name = String(argument[..<equals])
                inline = String(argument[argument.index(after: equals)...])
            }
            guard let spec = specs.first(where: { $0.name == name || $0.aliases.contains(name) }) else {
                throw UsageError(description: "unknown option \(name)")
            }
            let value: String
            if spec.value != nil {
                if let inline {
                    value = inline
                } else {
                    guard index < arguments.count else { throw UsageError(description: "\(spec.name) needs a value (\(spec.value ?? "VALUE"))") }
                    value = arguments[index]
                    index += 1
                }
            } else {
                guard inline == nil else { throw UsageError(description: "\(spec.name) takes no value") }
                value = ""
            }
            values[spec.name] = value
            repeated[spec.name, default: []].append(value)
        }
    }

    private static func isNegativeNumber(_ text: String) -> Bool {
        text.count > 1 && text.dropFirst().allSatisfy(\.isNumber)
    }

    /// True when the flag was given.
    package func has(_ name: String) -> Bool { values[name] != nil }

    /// The option's value, when given.
    package func value(_ name: String) -> String? { values[name] }

    /// Every value of an option given several times.
    package func all(_ name: String) -> [String] { repeated[name] ?? [] }

    /// The longest number of seconds an option takes: about 31 years.
    ///
    /// The commands turn seconds into `Duration` (`.seconds(timeout * 3)`), which converts to
    /// whole attoseconds and traps past about 1.7e20 s: `blekit pair --timeout 1e300` crashed.
    package static let maximumSeconds: Double = 1e9

    /// The option as a number of seconds, 0 to `maximumSeconds`.
    package func seconds(_ name: String, default fallback: Double) throws(UsageError) -> Double {
        guard let text = values[name] else { return fallback }
        guard let seconds = Double(text), seconds >= 0, seconds <= Self.maximumSeconds else {
            throw UsageError(description: "\(name) wants a number of seconds from 0 to 1000000000 (about 31 years), not '\(text)'")
        }
        return seconds
    }

    /// The option as an integer.
    package func integer(_ name: String) throws(UsageError) -> Int? {
        guard let text = values[name] else { return nil }
        guard let number = Int(text) else { throw UsageError(description: "\(name) wants a whole number, not '\(text)'") }
        return number
    }

    /// The option as an integer within `range`. A number outside is refused, not clamped or
    /// let through: `scan --count -1` used to stop at the first device and report
    /// "stopped after -1 device(s)", `notify --count 0` to exit at once with status 0.
    package func integer(_ name: String, in range: ClosedRange<Int>) throws(UsageError) -> Int? {
        guard let text = values[name] else { return nil }
        guard let number = Int(text), range.contains(number) else {
            let bounds = range.upperBound == Int.max ? "\(range.lowerBound) or more" : "from \(range.lowerBound) to \(range.upperBound)"
            throw UsageError(description: "\(name) wants a whole number \(bounds), not '\(text)'")
        }
        return number
    }
}
