extension Duration {
    /// The longest delay BleSim schedules, in milliseconds: about 31 years, beyond any run.
    static let longestSimulatedMilliseconds = 1e12

    /// `milliseconds` as a duration that never traps: NaN and negative values are zero, values
    /// beyond `longestSimulatedMilliseconds` are that.
    ///
    /// The standard library's `.milliseconds(_: Double)` converts to whole attoseconds and traps
    /// on NaN and past about 1.7e23 ms; a scenario file's `"advertisingInterval": 1e300` used to
    /// crash `blekit sim` there when a client scanned. Scenario files are bounded on load
    /// (`ScenarioLimit`); this keeps numbers set from Swift harmless too.
    static func clampedMilliseconds(_ milliseconds: Double) -> Duration {
        guard milliseconds > 0 else { return .zero }
        return .milliseconds(Swift.min(milliseconds, longestSimulatedMilliseconds))
    }
}
