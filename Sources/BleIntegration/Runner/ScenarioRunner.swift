import BleDBus
import Foundation

/// Runs scenarios one after another against one backend and collects their transcripts.
@BleLoop
public final class ScenarioRunner {
    /// The backend every scenario runs against.
    public let backend: IntegrationBackend

    /// A runner for `backend`.
    public init(backend: IntegrationBackend) {
        self.backend = backend
    }

    /// Every scenario, in the order `run` takes them.
    public nonisolated static var allScenarios: [IntegrationScenario] {
        CentralScenarios.all + EngineScenarios.all + PairingScenarios.all + FaultScenarios.all + NotifyAcrossReconnectScenarios.all + OutsidePeerScenarios.all + PeripheralManagerScenarios.all + PeripheralFlowScenarios.all + IncludedServicesScenarios.all + AsyncScenarios.all + SharedSessionScenarios.all
    }

    /// Runs one scenario: a clean slate first (no devices left from earlier ones), then its
    /// body, then its clean-up, whatever happened.
    public func run(_ scenario: IntegrationScenario) async -> Transcript {
        let started = ContinuousClock.now
        var transcript = Transcript(scenario: scenario.name, backend: backend.kind)
        let context = ScenarioContext(backend: backend)
        do {
            try await backend.reset()
            try await context.start()
            try await scenario.body(context)
            transcript.passed = true
        } catch {
            transcript.failure = String(describing: error)
        }
        await context.finish()
        if let gone = await backend.daemonGone() {
            transcript.passed = false
            transcript.failure = [transcript.failure, gone].compactMap { $0 }.joined(separator: "; ")
        }
        transcript.steps = context.steps
        transcript.states = context.trace.entries
        let elapsed = ContinuousClock.now - started
        transcript.seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return transcript
    }
}
