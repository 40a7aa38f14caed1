import Foundation

/// What the gateways of one fleet hear, from retained topics on the broker: each gateway
/// publishes `home/<fleet>/presence/<MAC>/<gateway>` = `{"id","gateway","rssi"}` (retained) for
/// the devices it hears, and its LWT says whether it is alive. A command that names no gateway
/// is carried out by the live gateway with the strongest recent report for the device, so every
/// gateway reaches the same verdict without talking to the others, and a gateway whose LWT turns
/// `offline` (killed, or network lost) drops out at once.
struct FleetCoordinator {
    struct Report {
        var rssi: Int
        var received: ContinuousClock.Instant
    }

    let fleet: String
    let gateway: String
    let baseTopic: String
    let lifetime: Duration
    /// Reports by device address, then gateway.
    private(set) var reports: [String: [String: Report]] = [:]
    /// Gateways whose LWT reads `online`.
    private(set) var online: Set<String> = []
    /// Last announcement per device: when, and at what RSSI.
    private var announced: [String: (rssi: Int, at: ContinuousClock.Instant)] = [:]

    init(fleet: String, gateway: String, baseTopic: String, lifetime: Duration) {
        self.fleet = fleet
        self.gateway = gateway
        self.baseTopic = baseTopic
        self.lifetime = lifetime
    }

    /// `home/<fleet>/presence/+/+`.
    var presencePattern: String { "\(baseTopic)/\(fleet)/presence/+/+" }
    /// `home/+/LWT`.
    var availabilityPattern: String { "\(baseTopic)/+/LWT" }

    func presenceTopic(_ topicID: String) -> String { "\(baseTopic)/\(fleet)/presence/\(topicID)/\(gateway)" }

    /// Whether to announce hearing `address` at `rssi` now: first time, every `interval`, or on a
    /// change of 6 dB (enough to change the ranking between rooms, not every jitter).
    mutating func shouldAnnounce(_ address: String, rssi: Int, now: ContinuousClock.Instant, interval: Duration) -> Bool {
        if let last = announced[address], now - last.at < interval, abs(last.rssi - rssi) < 6 { return false }
        announced[address] = (rssi, now)
        return true
    }

    /// Takes in a message from the fleet's topics; false when it is not one.
    mutating func receive(topic: String, payload: Data, now: ContinuousClock.Instant) -> Bool {
        let levels = topic.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        if levels.count == 3, levels[0] == baseTopic, levels[2] == "LWT" {
            let text = String(decoding: payload, as: UTF8.self)
            if text == "online" { online.insert(levels[1]) } else { online.remove(levels[1]) }
            return true
        }
        if levels.count == 5, levels[0] == baseTopic, levels[1] == fleet, levels[2] == "presence" {
            guard let json = JSONValue.parse(payload), let address = json["id"]?.stringValue?.uppercased(),
                  let rssi = json["rssi"]?.intValue else {
                // An empty retained message clears the report.
                for key in reports.keys { reports[key]?.removeValue(forKey: levels[4]) }
                return true
            }
            reports[address, default: [:]][levels[4]] = Report(rssi: rssi, received: now)
            return true
        }
        return false
    }

    /// The live gateway that hears `address` best, or nil when none does.
    func best(for address: String, now: ContinuousClock.Instant) -> (gateway: String, rssi: Int)? {
        let candidates = (reports[address.uppercased()] ?? [:]).filter { name, report in
            online.contains(name) && now - report.received <= lifetime
        }
        return candidates.map { (gateway: $0.key, rssi: $0.value.rssi) }
            .max { ($0.rssi, $1.gateway) < ($1.rssi, $0.gateway) }
    }

    /// The live gateway that answers for the fleet when no one hears a device (first by name).
    var spokesman: String? { online.min() }
}
