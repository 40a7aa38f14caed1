import Foundation

/// Where and how an `MQTTClient` connects: broker, credentials, TLS, will, back-off, buffering.
public struct MQTTOptions: Sendable {
    /// TLS settings, handed to libmosquitto (`mosquitto_tls_set`).
    public struct TLS: Sendable, Equatable {
        /// A PEM file of trusted certificate authorities.
        public var caFile: String?
        /// A directory of trusted certificate authorities (c_rehash layout).
        public var caPath: String?
        /// The client certificate, for brokers that ask for one.
        public var certificateFile: String?
        /// The client certificate's private key.
        public var keyFile: String?
        /// Skips the check of the broker's host name against its certificate (test brokers only).
        public var insecure: Bool

        /// TLS with the given files.
        public init(caFile: String? = nil, caPath: String? = nil, certificateFile: String? = nil, keyFile: String? = nil,
                    insecure: Bool = false) {
            self.caFile = caFile
            self.caPath = caPath
            self.certificateFile = certificateFile
            self.keyFile = keyFile
            self.insecure = insecure
        }
    }

    /// The last will: what the broker publishes for this client when its connection dies
    /// without a DISCONNECT (crash, kill, network loss).
    public struct Will: Sendable, Equatable {
        /// Its topic.
        public var topic: String
        /// Its payload.
        public var payload: String
        /// Its QoS.
        public var qos: Int32
        /// Whether the broker keeps it for later subscribers.
        public var retain: Bool

        /// A will.
        public init(topic: String, payload: String, qos: Int32 = 1, retain: Bool = true) {
            self.topic = topic
            self.payload = payload
            self.qos = qos
            self.retain = retain
        }
    }

    /// The broker's host name or address.
    public var host: String
    /// The broker's port (1883 plain, 8883 TLS by convention).
    public var port: Int32
    /// The client identifier; brokers drop an older connection with the same identifier.
    public var clientID: String
    /// The user name, if the broker wants one.
    public var username: String?
    /// The password, with `username`.
    public var password: String?
    /// TLS, or nil for plain TCP.
    public var tls: TLS?
    /// Seconds between keep-alive pings.
    public var keepAlive: Int32
    /// The last will, if any.
    public var will: Will?
    /// The first pause before reconnecting; doubled after each failed attempt.
    public var reconnectDelay: Duration
    /// The longest pause between reconnection attempts.
    public var maximumReconnectDelay: Duration
    /// How long one connection attempt may wait for the broker's CONNACK before it counts as failed.
    public var connectTimeout: Duration
    /// How many messages are kept while the broker is unreachable; past it the oldest are
    /// dropped and counted (`MQTTClient.droppedMessages`).
    public var offlineBufferCapacity: Int

    /// Options for a broker at `host:port`.
    public init(host: String = "localhost", port: Int32 = 1883, clientID: String, username: String? = nil, password: String? = nil,
                tls: TLS? = nil, keepAlive: Int32 = 30, will: Will? = nil, reconnectDelay: Duration = .seconds(1),
                maximumReconnectDelay: Duration = .seconds(60), connectTimeout: Duration = .seconds(10),
                offlineBufferCapacity: Int = 10_000) {
        self.host = host
        self.port = port
        self.clientID = clientID
        self.username = username
        self.password = password
        self.tls = tls
        self.keepAlive = keepAlive
        self.will = will
        self.reconnectDelay = reconnectDelay
        self.maximumReconnectDelay = maximumReconnectDelay
        self.connectTimeout = connectTimeout
        self.offlineBufferCapacity = offlineBufferCapacity
    }
}
