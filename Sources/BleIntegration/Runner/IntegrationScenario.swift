import BleDBus

/// One integration scenario: written once, run against every backend it names.
public struct IntegrationScenario: Sendable {
    /// A short identifier (`central.readWrite`), also the transcript's file name.
    public let name: String
    /// What it shows, for the parity report.
    public let summary: String
    /// The backends it runs on; a scenario that needs an outside program names where it runs.
    public let backends: Set<BackendKind>
    let body: @BleLoop @Sendable (ScenarioContext) async throws -> Void

    init(_ name: String, _ summary: String, backends: Set<BackendKind> = Set(BackendKind.allCases),
         body: @escaping @BleLoop @Sendable (ScenarioContext) async throws -> Void) {
        self.name = name
        self.summary = summary
        self.backends = backends
        self.body = body
    }
}
