import BleDBus
import BleIntegration
import BleTestSupport
import Foundation
import Testing

/// The BleAsync integration scenarios (registered for the VM) against BleSim; their parity with
/// bluetoothd waits for transcripts recorded by `make test-bluez`.
@Suite(.serialized, .timeLimit(.minutes(TestTime.minutes(2))))
@BleLoop
struct AsyncScenariosOnBleSimTests {
    @Test(arguments: AsyncScenarios.all.map(\.name))
    func scenarioPassesOnBleSim(_ name: String) async throws {
        let scenario = try #require(AsyncScenarios.all.first { $0.name == name })
        let backend = try await SimulatorBackend.start()
        defer { backend.tearDown() }
        let transcript = await ScenarioRunner(backend: backend).run(scenario)
        #expect(transcript.passed, "\(name): \(transcript.failure ?? "")\nsteps:\n\(transcript.steps.joined(separator: "\n"))")
    }
}
