import BleDBus
import BleIntegration
import Foundation
import Testing

/// The VM scenario of the peripheral role, against BleSim (its parity with bluetoothd waits
/// for a recorded transcript).
@BleLoop
@Test func thePeripheralManagerScenarioPassesOnBleSim() async throws {
    let backend = try await SimulatorBackend.start()
    defer { backend.tearDown() }
    let transcript = await ScenarioRunner(backend: backend).run(PeripheralManagerScenarios.serve)
    #expect(transcript.passed, "\(transcript.failure ?? "")\nsteps:\n\(transcript.steps.joined(separator: "\n"))")
}
