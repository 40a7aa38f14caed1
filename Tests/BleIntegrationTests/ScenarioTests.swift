import BleDBus
import BleIntegration
import Foundation
import Testing

/// Every integration scenario against BleSim, and each transcript against the one recorded on
/// the real bluetoothd 5.66 (`make test-bluez` refreshes `Parity/bluetoothd/`): a change that
/// makes BleSim answer differently from the real daemon fails here, unless it is one of the
/// known differences listed in `Parity/known-differences.json` (each pointing at its item in
/// BleSim's README).
@Suite(.serialized) struct ScenarioTests {
    static let parity = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Parity")

    static var scenarioNames: [String] { ScenarioRunner.allScenarios.filter { $0.backends.contains(.bleSim) }.map(\.name) }

    @BleLoop
    @Test(arguments: scenarioNames)
    func scenarioPassesOnBleSimAndMatchesBluetoothd(_ name: String) async throws {
        let scenario = try #require(ScenarioRunner.allScenarios.first { $0.name == name })
        let backend = try await SimulatorBackend.start()
        defer { backend.tearDown() }
        let transcript = await ScenarioRunner(backend: backend).run(scenario)
        #expect(transcript.passed, "\(name) failed on BleSim: \(transcript.failure ?? "")\nsteps:\n\(transcript.steps.joined(separator: "\n"))")

        let recorded = try Transcript.load(from: Self.parity.appendingPathComponent("bluetoothd"))
        let real = try #require(recorded[name], "no bluetoothd transcript for \(name): run make test-bluez")
        let known = try KnownDifference.load(from: Self.parity.appendingPathComponent("known-differences.json"))
        let comparison = ParityComparison(bluetoothd: [name: real], bleSim: [name: transcript], known: known)
        #expect(comparison.problems.isEmpty, "BleSim differs from bluetoothd:\n\(comparison.problems.joined(separator: "\n"))")
    }

    @Test func everyKnownDifferenceNamesAnItemOfBleSimsReadme() throws {
        let readme = try String(contentsOf: Self.parity.deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/BleSim/README.md"), encoding: .utf8)
        let section = try #require(readme.range(of: "## Known differences from bluetoothd 5.66"))
        let items = Set(readme[section.upperBound...].split(separator: "\n").compactMap { line -> Int? in
            let digits = line.prefix { $0.isNumber }
            return line.dropFirst(digits.count).hasPrefix(". ") ? Int(digits) : nil
        })
        let known = try KnownDifference.load(from: Self.parity.appendingPathComponent("known-differences.json"))
        for difference in known {
            #expect(items.contains(difference.readmeItem), "known difference in \(difference.scenario) cites README item \(difference.readmeItem), which does not exist")
            #expect(ScenarioTests.scenarioNames.contains(difference.scenario), "known difference for unknown scenario \(difference.scenario)")
        }
    }

    /// A new capability's scenario is one file in Sources/BleIntegration/Scenarios: a scenario
    /// written there but left out of its group's `all`, or a group left out of
    /// `ScenarioRunner.allScenarios`, would never run on either BlueZ, and nothing else would say so.
    @Test func everyScenarioWrittenInTheScenariosFolderRuns() throws {
        let folder = Self.parity.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/BleIntegration/Scenarios")
        let declaration = try Regex(#"IntegrationScenario\(\s*"([A-Za-z0-9]+\.[A-Za-z0-9]+)""#)
        var written: [String: String] = [:]
        for file in try FileManager.default.contentsOfDirectory(atPath: folder.path) where file.hasSuffix(".swift") {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            for match in text.matches(of: declaration) {
                if let name = match.output[1].substring { written[String(name)] = file }
            }
        }
        #expect(written.count >= 20, "the scan found only \(written.count) scenarios; has the declaration's shape changed?")
        let registered = ScenarioRunner.allScenarios.map(\.name)
        #expect(Set(registered).count == registered.count, "two scenarios share a name: \(registered.sorted())")
        for (name, file) in written.sorted(by: { $0.key < $1.key }) {
            #expect(registered.contains(name), "scenario \(name) in \(file) never runs: add it to its group's `all` (and the group to ScenarioRunner.allScenarios)")
        }
    }
}

/// The comparison itself: alignment and the verdicts.
struct ParityComparisonTests {
    func transcript(_ backend: BackendKind, _ steps: [String], passed: Bool = true) -> Transcript {
        Transcript(scenario: "s", backend: backend, steps: steps, states: [], passed: passed)
    }

    @Test func identicalTranscriptsAgree() {
        let comparison = ParityComparison(bluetoothd: ["s": transcript(.bluetoothd, ["a", "b"])],
                                          bleSim: ["s": transcript(.bleSim, ["a", "b"])], known: [])
        #expect(comparison.problems.isEmpty)
        #expect(comparison.results.first?.agreeing == 2)
    }

    @Test func anExtraEntryIsOneDifferenceNotAShift() {
        let comparison = ParityComparison(bluetoothd: ["s": transcript(.bluetoothd, ["a", "x", "b", "c"])],
                                          bleSim: ["s": transcript(.bleSim, ["a", "b", "c"])], known: [])
        #expect(comparison.results.first?.agreeing == 3)
        #expect(comparison.results.first?.unexplained.count == 1)
        #expect(comparison.results.first?.unexplained.first?.bluetoothd == "x")
        #expect(comparison.results.first?.unexplained.first?.bleSim == nil)
    }

    @Test func aChangedEntryIsShownSideBySideAndCanBeExplained() {
        let known = [KnownDifference(scenario: "s", list: "steps", bluetoothd: "x1", bleSim: "x2", readmeItem: 3)]
        let comparison = ParityComparison(bluetoothd: ["s": transcript(.bluetoothd, ["a", "x1", "b"])],
                                          bleSim: ["s": transcript(.bleSim, ["a", "x2", "b"])], known: known)
        #expect(comparison.problems.isEmpty)
        #expect(comparison.results.first?.explained.first?.readmeItem == 3)
        #expect(comparison.markdown(title: "t", context: "c").contains("known difference 3"))
    }

    @Test func aFailedScenarioIsAProblemEvenWhenTheEntriesAgree() {
        let comparison = ParityComparison(bluetoothd: ["s": transcript(.bluetoothd, ["a"], passed: false)],
                                          bleSim: ["s": transcript(.bleSim, ["a"])], known: [])
        #expect(comparison.problems == ["s: did not pass on bluetoothd"])
    }

    @Test func aScenarioRunOnOneSideOnlyIsAProblem() {
        let comparison = ParityComparison(bluetoothd: [:], bleSim: ["s": transcript(.bleSim, ["a"])], known: [])
        #expect(comparison.problems == ["s: did not pass on bluetoothd"])
    }
}

/// Known differences written as patterns, for what varies between runs of the real daemon.
struct KnownDifferencePatternTests {
    @Test func aPatternMatchesEveryVariantOfARealRunAndNothingElse() {
        let known = KnownDifference(scenario: "s", list: "steps", bluetoothd: #"re:states \[a(, (b|c))*, d\]"#, bleSim: "states [a, d]", readmeItem: 12)
        #expect(known.explains(bluetoothd: "states [a, b, d]", bleSim: "states [a, d]"))
        #expect(known.explains(bluetoothd: "states [a, c, b, d]", bleSim: "states [a, d]"))
        #expect(!known.explains(bluetoothd: "states [a, x, d]", bleSim: "states [a, d]"))
        #expect(!known.explains(bluetoothd: "states [a, b, d]", bleSim: "states [a, b, d]"))
        #expect(!known.explains(bluetoothd: "prefix states [a, b, d]", bleSim: "states [a, d]"))
    }
}
