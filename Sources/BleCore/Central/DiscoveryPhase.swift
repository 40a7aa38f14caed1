/// Where a central's discovery session on its adapter is, as bluetoothd sees it.
///
/// bluetoothd 5.66 keeps a client's session until the controller confirms a StopDiscovery
/// (`discovery_stop` waits for MGMT Stop Discovery when it is the last session). A StartDiscovery
/// sent in that window is refused with InProgress, and the stop then ends discovery: a scan
/// restarted right after `stopScan()` would hear nothing, silently. So a stop is a phase of its
/// own, and a scan requested during it starts when the stop is answered.
enum DiscoveryPhase: Equatable {
    /// No session: `beginDiscovery` starts one.
    case idle
    /// StartDiscovery sent, not answered yet. A `Discovering=false` now is the end of an
    /// earlier session (ours, just stopped), not of this one.
    case starting
    /// StartDiscovery answered: a `Discovering=false` now means someone ended our discovery.
    case running
    /// StopDiscovery sent, not answered yet.
    case stopping

    /// A session is wanted and bluetoothd has it or is about to.
    var hasSession: Bool { self == .starting || self == .running }
}
