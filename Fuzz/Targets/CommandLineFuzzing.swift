// blekit's parser, a target that is no product: BleReliabilityTests depends on it in BleKit's
// package; the Fuzz package compiles its sources into this module (Fuzz/Package.swift says why).
#if !BLEKIT_FUZZ_PACKAGE
import BlekitCLI
#endif
import Foundation

/// blekit's command line: the bytes split at NUL into arguments, parsed against the global
/// options and options of every kind the commands declare, then read as the commands read them.
extension FuzzTarget {
    static let commandLineSpecs: [OptionSpec] = GlobalOptions.specs + [
        .value("--timeout", "SECONDS", "seconds"), .value("--duration", "SECONDS", "seconds"),
        .value("--count", "N", "a whole number"), .value("--interval", "MS", "a whole number"),
        .value("--filter", "TEXT", "repeatable"), .flag("--without-response", "a flag"),
    ]

    static func commandLine(_ data: Data) {
        let arguments = data.split(separator: 0, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
        guard let parsed = try? ParsedArguments(arguments, specs: commandLineSpecs) else { return }
        precondition(parsed.positionals.allSatisfy(arguments.contains), "a positional argument that was not given")
        for (name, value) in parsed.values {
            precondition(commandLineSpecs.contains { $0.name == name }, "an option no spec declares")
            precondition(parsed.all(name).last == value, "the last value of a repeated option is not its value")
        }
        _ = try? GlobalOptions(parsed, environment: [:])
        for name in ["--timeout", "--duration"] {
            guard let seconds = try? parsed.seconds(name, default: 10) else { continue }
            precondition(seconds >= 0 && seconds <= ParsedArguments.maximumSeconds, "seconds outside 0…maximumSeconds")
            // What the commands make of it: `pair` waits three times the timeout.
            _ = Duration.seconds(seconds * 3)
        }
        for name in ["--count", "--interval"] { _ = try? parsed.integer(name) }
    }

    static var commandLineSeeds: [Data] {
        [
            ["scan", "--timeout", "5", "--filter", "a", "--filter=b", "--json", "-h"],
            ["write", "C0:FF:EE:00:00:01", "2a39", "-5", "--without-response", "--bus", "unix:path=/tmp/bus", "--", "--count"],
            ["notify", "--duration=0.5", "--count", "3", "--adapter", "hci1", "--bus", "session"],
        ].map { Data($0.joined(separator: "\0").utf8) }
    }
}
