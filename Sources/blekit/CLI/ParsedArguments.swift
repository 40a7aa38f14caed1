/// A command line split into options and positional arguments, checked against the specs.
struct ParsedArguments: Sendable {
    /// Why a command line was refused.
    struct UsageError: Error, CustomStringConvertible {
        let description: String
    }

    /// The positional arguments, in order.
    private(set) var positionals: [String] = []
    /// Options by their main spelling: the value, or "" for a flag.
    private(set) var values: [String: String] = [:]
    /// Options given more than once, in order (`--filter a --filter b`).
    private(set) var repeated: [String: [String]] = [:]

    /// Parses `arguments` against `specs`; `--` ends the options.
    init(_ arguments: [String], specs: [OptionSpec]) throws(UsageError) {
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
    func has(_ name: String) -> Bool { values[name] != nil }

    /// The option's value, when given.
    func value(_ name: String) -> String? { values[name] }

    /// Every value of an option given several times.
    func all(_ name: String) -> [String] { repeated[name] ?? [] }

    /// The option as a number of seconds.
    func seconds(_ name: String, default fallback: Double) throws(UsageError) -> Double {
        guard let text = values[name] else { return fallback }
        guard let seconds = Double(text), seconds >= 0, seconds.isFinite else {
            throw UsageError(description: "\(name) wants a number of seconds, not '\(text)'")
        }
        return seconds
    }

    /// The option as an integer.
    func integer(_ name: String) throws(UsageError) -> Int? {
        guard let text = values[name] else { return nil }
        guard let number = Int(text) else { throw UsageError(description: "\(name) wants a whole number, not '\(text)'") }
        return number
    }
}
