import BleDBus
import Foundation
import Testing

/// Every input that once crashed a fuzz target (Fuzz/Regressions/<target>/) runs again here,
/// through the harness compiled into this target (FuzzTargets, a link to Fuzz/Targets).
@Suite
struct FuzzRegressionTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fuzz/Regressions")

    @Test(arguments: FuzzTarget.allCases)
    func regressionInputsStillPass(_ target: FuzzTarget) throws {
        let folder = Self.root.appendingPathComponent(target.rawValue)
        let files = try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
        #expect(!files.isEmpty, "no regression inputs for \(target.rawValue)")
        for file in files { target.run(try Data(contentsOf: file)) }
    }

    @Test(arguments: FuzzTarget.allCases)
    func seedsAreWellFormedAndPass(_ target: FuzzTarget) throws {
        #expect(!target.seeds.isEmpty)
        for seed in target.seeds { target.run(seed) }
        if target == .dbusMessage {
            for seed in target.seeds { #expect(throws: Never.self) { try DBusMessage(wireBytes: seed) } }
        }
        if target == .scenarioModel {
            // The harness finds Scenarios/ by walking up from its own file, whichever package compiled it.
            #expect(!FuzzTarget.scenarioFiles.isEmpty, "the repository's Scenarios/*.json are missing from the scenario-model seeds")
        }
    }
}
