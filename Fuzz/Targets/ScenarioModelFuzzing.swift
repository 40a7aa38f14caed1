import BleCore
import BleSim
import Foundation

/// A scenario file as `blekit sim` takes it: the validating loader, then the simulator built
/// from it (peripherals, their GATT databases and the faults armed), on the loop thread.
extension FuzzTarget {
    static func scenarioModel(_ data: Data) {
        guard let scenario = try? Scenario.parse(data, name: "fuzz") else { return }
        let done = DispatchSemaphore(value: 0)
        BleLoop.perform {
            let simulator = scenario.makeSimulator()
            precondition(simulator.peripherals.count == scenario.peripherals.count, "a peripheral of the file left out of the simulator")
            done.signal()
        }
        done.wait()
    }

    /// The scenario files of the repository (Scenarios/), found by walking up from this file:
    /// compiled into BleReliabilityTests it is reached through Tests/BleReliabilityTests/FuzzTargets,
    /// into the Fuzz package through Fuzz/Harness/Targets.
    static var scenarioFiles: [Data] {
        var folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while folder.path != "/", !FileManager.default.fileExists(atPath: folder.appendingPathComponent("Scenarios").path) {
            folder.deleteLastPathComponent()
        }
        folder.appendPathComponent("Scenarios")
        let files = (try? FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)) ?? []
        return files.filter { $0.pathExtension == "json" }.sorted { $0.path < $1.path }.compactMap { try? Data(contentsOf: $0) }
    }
}
