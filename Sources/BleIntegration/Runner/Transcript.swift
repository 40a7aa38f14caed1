import Foundation

/// What one scenario observed on one backend: the steps as BleKit's API reported them, and
/// the BlueZ property states the central's adapter went through. Both are compared between
/// the real bluetoothd and BleSim by `ParityComparison`.
public struct Transcript: Codable, Equatable, Sendable {
    /// The scenario's name.
    public var scenario: String
    /// Where it ran.
    public var backend: BackendKind
    /// Replies, results and errors, in the order the scenario saw them.
    public var steps: [String]
    /// Property states (`Connected=true`, …) of the central's adapter and its devices, in order.
    public var states: [String]
    /// True when the scenario's checks all held.
    public var passed: Bool
    /// Why it failed.
    public var failure: String?
    /// Wall time of the run.
    public var seconds: Double

    /// A transcript to fill in.
    public init(scenario: String, backend: BackendKind, steps: [String] = [], states: [String] = [],
                passed: Bool = false, failure: String? = nil, seconds: Double = 0) {
        self.scenario = scenario
        self.backend = backend
        self.steps = steps
        self.states = states
        self.passed = passed
        self.failure = failure
        self.seconds = seconds
    }

    /// Reads every `*.json` transcript in `directory`, keyed by scenario name.
    public static func load(from directory: URL) throws -> [String: Transcript] {
        let files = try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "json" }
        var result: [String: Transcript] = [:]
        for file in files {
            let transcript = try JSONDecoder().decode(Transcript.self, from: Data(contentsOf: file))
            result[transcript.scenario] = transcript
        }
        return result
    }

    /// Writes the transcript as `<directory>/<scenario>.json`.
    public func write(to directory: URL) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(self).write(to: directory.appendingPathComponent("\(scenario).json"), options: .atomic)
    }
}
