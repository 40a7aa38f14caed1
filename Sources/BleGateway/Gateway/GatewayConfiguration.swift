import BleCore
import Foundation

/// How a `Gateway` runs: its name and topics, the broker, the adapter, and OpenMQTTGateway's
/// publishing options (lists, minimum RSSI, interval per device, raw frames, discovery).
public struct GatewayConfiguration: Sendable {
    /// The gateway's name, the `<gateway>` of `home/<gateway>/BTtoMQTT/<MAC>`; unique per broker.
    public var name: String
    /// The first topic level (`home`).
    public var baseTopic: String
    /// The broker connection (its will is set by the gateway: `home/<gateway>/LWT` = offline).
    public var mqtt: MQTTOptions
    /// The bus to bluetoothd (`.system`, or a private bus with BleSim).
    public var bus: BleBus
    /// The adapter (`hci0`), or nil for the first powered one.
    public var adapter: String?
    /// Active scanning (scan requests, so scan responses and names are heard). BlueZ's
    /// `StartDiscovery` always scans actively; passive scanning needs BlueZ's
    /// AdvertisementMonitor API (experimental in 5.66), so `false` is accepted, logged, and the
    /// scan stays active.
    public var activeScan: Bool
    /// Only these addresses are published, when not empty (`white-list`).
    public var whiteList: Set<String>
    /// These addresses are never published (`black-list`).
    public var blackList: Set<String>
    /// Advertisements weaker than this (dBm) are not published (`minrssi`; OpenMQTTGateway gives it as a magnitude).
    public var minimumRSSI: Int
    /// The shortest time between two messages for one device (`interval` per device); zero
    /// publishes every advertisement.
    public var publishInterval: Duration
    /// Also publish every advertisement raw on `home/<gateway>/BTtoMQTT/undecoded`, for Theengs Gateway to decode.
    public var publishUndecoded: Bool
    /// Publish only advertisements a decoder understood (`onlysensors`).
    public var onlySensors: Bool
    /// Announce decoded devices through Home Assistant MQTT discovery.
    public var homeAssistantDiscovery: Bool
    /// The discovery prefix (`homeassistant`).
    public var discoveryPrefix: String
    /// The fleet this gateway belongs to: commands on `home/<fleet>/commands/MQTTtoBT/config`
    /// go to the fleet's gateway that hears the device best. Nil: no fleet coordination.
    public var fleet: String?
    /// How often a gateway re-announces what it hears to the fleet (retained presence topics).
    public var fleetAnnounceInterval: Duration
    /// How long a fleet presence report counts after it arrived.
    public var fleetPresenceLifetime: Duration
    /// Named operation commands that `{"cmd": NAME, "id": MAC}` runs (see `OperationCommandSpec`).
    public var operationCommands: [OperationCommandSpec]
    /// The QoS of each topic class.
    public var qos: TopicQoS
    /// The BLE options of the central (timeouts and connect retries apply to commands).
    public var central: CentralManagerOptions

    /// A configuration with OpenMQTTGateway's defaults.
    public init(name: String, mqtt: MQTTOptions, bus: BleBus = .system, adapter: String? = nil, baseTopic: String = "home",
                activeScan: Bool = true, whiteList: Set<String> = [], blackList: Set<String> = [], minimumRSSI: Int = -100,
                publishInterval: Duration = .zero, publishUndecoded: Bool = false, onlySensors: Bool = false,
                homeAssistantDiscovery: Bool = false, discoveryPrefix: String = "homeassistant", fleet: String? = nil,
                fleetAnnounceInterval: Duration = .seconds(5), fleetPresenceLifetime: Duration = .seconds(60),
                operationCommands: [OperationCommandSpec] = [], qos: TopicQoS = TopicQoS(), central: CentralManagerOptions? = nil) {
        self.name = name
        self.baseTopic = baseTopic
        self.mqtt = mqtt
        self.bus = bus
        self.adapter = adapter
        self.activeScan = activeScan
        self.whiteList = Set(whiteList.map { $0.uppercased() })
        self.blackList = Set(blackList.map { $0.uppercased() })
        self.minimumRSSI = minimumRSSI
        self.publishInterval = publishInterval
        self.publishUndecoded = publishUndecoded
        self.onlySensors = onlySensors
        self.homeAssistantDiscovery = homeAssistantDiscovery
        self.discoveryPrefix = discoveryPrefix
        self.fleet = fleet
        self.fleetAnnounceInterval = fleetAnnounceInterval
        self.fleetPresenceLifetime = fleetPresenceLifetime
        self.operationCommands = operationCommands
        self.qos = qos
        self.central = central ?? CentralManagerOptions(bus: bus, adapter: adapter, powerOnAdapter: false,
                                                        operationTimeout: .seconds(10), connectTimeout: .seconds(20))
    }

    /// `home/<gateway>`.
    public var gatewayTopic: String { "\(baseTopic)/\(name)" }
    /// `home/<gateway>/BTtoMQTT`.
    public var advertisementTopic: String { "\(gatewayTopic)/BTtoMQTT" }
    /// `home/<gateway>/LWT`: retained online/offline.
    public var availabilityTopic: String { "\(gatewayTopic)/LWT" }
    /// `home/<gateway>/commands/MQTTtoBT/config`.
    public var commandTopic: String { "\(gatewayTopic)/commands/MQTTtoBT/config" }
    /// `home/<fleet>/commands/MQTTtoBT/config`, when in a fleet.
    public var fleetCommandTopic: String? { fleet.map { "\(baseTopic)/\($0)/commands/MQTTtoBT/config" } }
}
