/// The MQTT QoS of each class of topic a gateway publishes: advertisements are frequent and
/// superseded by the next one (0), the rest must arrive (1).
public struct TopicQoS: Sendable, Equatable {
    /// `home/<gateway>/BTtoMQTT/<MAC>` and `…/undecoded`.
    public var advertisements: Int32
    /// Home Assistant discovery configs.
    public var discovery: Int32
    /// `home/<gateway>/LWT` (and the will).
    public var availability: Int32
    /// Responses to commands.
    public var commandResponses: Int32
    /// Fleet presence reports.
    public var fleet: Int32
    /// Subscriptions to command topics.
    public var commands: Int32

    /// The defaults above.
    public init(advertisements: Int32 = 0, discovery: Int32 = 1, availability: Int32 = 1, commandResponses: Int32 = 1,
                fleet: Int32 = 1, commands: Int32 = 1) {
        self.advertisements = advertisements
        self.discovery = discovery
        self.availability = availability
        self.commandResponses = commandResponses
        self.fleet = fleet
        self.commands = commands
    }
}
