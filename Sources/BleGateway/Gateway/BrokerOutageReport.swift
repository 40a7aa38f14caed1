import Foundation

/// What a gateway says about its broker without `--verbose`: a broker that cannot be reached,
/// or is lost, once per outage, with what became of the messages meanwhile; its return once.
/// Every further failed attempt of the same outage stays a verbose line, so a broker that is
/// down for an hour costs one warning, not one per retry.
struct BrokerOutageReport {
    /// Where the messages stood when something was said, for the next line's differences.
    struct Tally {
        var published: Int
        var dropped: Int
        var buffered: Int
        var unconfirmed: Int
        var capacity: Int
    }

    private var everConnected = false
    /// When the outage being reported began; nil while connected or not yet reported.
    private var reportedSince: ContinuousClock.Instant?
    private var droppedAtStart = 0

    /// The line for a broker that has not answered since the gateway started, or nil when it
    /// was said already (or the broker did answer).
    mutating func unreachable(_ broker: String, reason: String?, _ tally: Tally, now: ContinuousClock.Instant) -> String? {
        guard !everConnected, reportedSince == nil else { return nil }
        reportedSince = now
        droppedAtStart = tally.dropped
        return "cannot reach the MQTT broker at \(broker): \(reason ?? "no answer yet"); still trying. "
            + "\(tally.published) messages published; \(tally.buffered) buffered (up to \(tally.capacity), the oldest dropped past that), "
            + "\(tally.dropped) dropped"
    }

    /// The line for a connection that was up and died, or nil when this outage was reported.
    mutating func lost(_ broker: String, reason: String, _ tally: Tally, now: ContinuousClock.Instant) -> String? {
        guard everConnected else { return unreachable(broker, reason: reason, tally, now: now) }
        guard reportedSince == nil else { return nil }
        reportedSince = now
        droppedAtStart = tally.dropped
        return "lost the MQTT broker at \(broker): \(reason); reconnecting. \(tally.unconfirmed) messages await the broker's "
            + "acknowledgement, \(tally.buffered) buffered (up to \(tally.capacity), the oldest dropped past that)"
    }

    /// The line for a connection after a reported outage, or nil when none was reported.
    mutating func connected(_ broker: String, _ tally: Tally, now: ContinuousClock.Instant) -> String? {
        everConnected = true
        guard let since = reportedSince else { return nil }
        reportedSince = nil
        let seconds = Double((now - since).components.seconds) + Double((now - since).components.attoseconds) / 1e18
        return "the MQTT broker at \(broker) is back (\(String(format: "%.1f", seconds)) s after the first warning): sending "
            + "\(tally.buffered) buffered messages; \(tally.dropped - droppedAtStart) dropped while it was away"
    }
}
