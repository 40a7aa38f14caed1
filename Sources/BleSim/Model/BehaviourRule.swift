import Foundation

/// A scripted reaction of a virtual peripheral: "on write X, notify Y in N packets", "on read,
/// return Z", each after an optional latency. Rules are tried in order; the first whose trigger
/// matches runs.
public struct BehaviourRule: Sendable, Codable, Equatable {
    /// What starts the rule.
    public enum Trigger: Sendable, Codable, Equatable {
        /// A write to `characteristic` whose value starts with `prefix` (any value when nil).
        case write(characteristic: String, prefix: Data?)
        /// A read of `characteristic`.
        case read(characteristic: String)
        /// A central enabling notifications or indications on `characteristic`.
        case subscribe(characteristic: String)
        /// A central connecting.
        case connect
        /// Every `milliseconds` while a central is connected (a sensor's periodic notification).
        case periodic(milliseconds: Double)
    }

    /// What the peripheral does.
    public enum Response: Sendable, Codable, Equatable {
        /// Sends `value` as notifications on `characteristic`, split into `packets` parts (or
        /// into MTU−3 chunks when nil).
        case notify(characteristic: String, value: Data, packets: Int?)
        /// Notifies back what was written, on `characteristic`.
        case echo(characteristic: String)
        /// Stores `value` in `characteristic` (what later reads return).
        case setValue(characteristic: String, value: Data)
        /// Answers the triggering read with `value`.
        case reply(value: Data)
        /// Answers the triggering read or write with an ATT error code (e.g. 0x0e).
        case attError(code: UInt8)
        /// Drops the link.
        case disconnect
    }

    /// What starts the rule: a write, read or subscription on a characteristic, a connect, or a period.
    public var trigger: Trigger
    /// The responses, in order.
    public var responses: [Response]
    /// How long the peripheral takes before responding, on top of the timing model.
    public var latencyMilliseconds: Double

    /// A rule.
    public init(_ trigger: Trigger, _ responses: [Response], latencyMilliseconds: Double = 0) {
        self.trigger = trigger
        self.responses = responses
        self.latencyMilliseconds = latencyMilliseconds
    }

    private enum CodingKeys: String, CodingKey { case on, then, latency }
    private enum TriggerKeys: String, CodingKey { case write, read, subscribe, connect, prefix, every }
    private enum ResponseKeys: String, CodingKey { case notify, echo, setValue, value, packets, reply, attError, disconnect, characteristic }

    /// JSON: `{"on": {"write": "fff1", "prefix": "01"}, "then": [{"notify": "fff2", "value": "0102", "packets": 2}], "latency": 10}`.
    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let on = try container.nestedContainer(keyedBy: TriggerKeys.self, forKey: .on)
        if let characteristic = try on.decodeIfPresent(String.self, forKey: .write) {
            trigger = .write(characteristic: try SimUUID.decode(characteristic, in: on, key: .write),
                             prefix: try on.decodeIfPresent(HexData.self, forKey: .prefix)?.data)
        } else if let characteristic = try on.decodeIfPresent(String.self, forKey: .read) {
            trigger = .read(characteristic: try SimUUID.decode(characteristic, in: on, key: .read))
        } else if let characteristic = try on.decodeIfPresent(String.self, forKey: .subscribe) {
            trigger = .subscribe(characteristic: try SimUUID.decode(characteristic, in: on, key: .subscribe))
        } else if try on.decodeIfPresent(Bool.self, forKey: .connect) == true {
            trigger = .connect
        } else if let every = try on.decodeIfPresent(Double.self, forKey: .every) {
            guard every >= 7.5 else {
                throw DecodingError.dataCorruptedError(forKey: .every, in: on, debugDescription: "periodic rules need at least 7.5 ms (one connection interval)")
            }
            trigger = .periodic(milliseconds: every)
        } else {
            throw DecodingError.dataCorruptedError(forKey: .on, in: container,
                                                   debugDescription: "a rule needs 'on' with one of write, read, subscribe, connect or every")
        }
        var responses: [Response] = []
        var list = try container.nestedUnkeyedContainer(forKey: .then)
        while !list.isAtEnd {
            let item = try list.nestedContainer(keyedBy: ResponseKeys.self)
            if let characteristic = try item.decodeIfPresent(String.self, forKey: .notify) {
                let packets = try item.decodeIfPresent(Int.self, forKey: .packets)
                if let packets, packets < 1 {
                    throw DecodingError.dataCorruptedError(forKey: .packets, in: item, debugDescription: "packets must be at least 1")
                }
                responses.append(.notify(characteristic: try SimUUID.decode(characteristic, in: item, key: .notify),
                                         value: try item.decode(HexData.self, forKey: .value).data, packets: packets))
            } else if let characteristic = try item.decodeIfPresent(String.self, forKey: .echo) {
                responses.append(.echo(characteristic: try SimUUID.decode(characteristic, in: item, key: .echo)))
            } else if let characteristic = try item.decodeIfPresent(String.self, forKey: .setValue) {
                responses.append(.setValue(characteristic: try SimUUID.decode(characteristic, in: item, key: .setValue),
                                           value: try item.decode(HexData.self, forKey: .value).data))
            } else if let value = try item.decodeIfPresent(HexData.self, forKey: .reply) {
                responses.append(.reply(value: value.data))
            } else if let code = try item.decodeIfPresent(UInt8.self, forKey: .attError) {
                responses.append(.attError(code: code))
            } else if try item.decodeIfPresent(Bool.self, forKey: .disconnect) == true {
                responses.append(.disconnect)
            } else {
                throw DecodingError.dataCorruptedError(forKey: .notify, in: item,
                                                       debugDescription: "a response needs one of notify, echo, setValue, reply, attError, disconnect")
            }
        }
        self.responses = responses
        latencyMilliseconds = try container.decodeIfPresent(Double.self, forKey: .latency) ?? 0
    }

    /// Writes the JSON form.
    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        var on = container.nestedContainer(keyedBy: TriggerKeys.self, forKey: .on)
        switch trigger {
        case .write(let characteristic, let prefix):
            try on.encode(characteristic, forKey: .write)
            try on.encodeIfPresent(prefix.map(HexData.init), forKey: .prefix)
        case .read(let characteristic): try on.encode(characteristic, forKey: .read)
        case .subscribe(let characteristic): try on.encode(characteristic, forKey: .subscribe)
        case .connect: try on.encode(true, forKey: .connect)
        case .periodic(let milliseconds): try on.encode(milliseconds, forKey: .every)
        }
        var list = container.nestedUnkeyedContainer(forKey: .then)
        for response in responses {
            var item = list.nestedContainer(keyedBy: ResponseKeys.self)
            switch response {
            case .notify(let characteristic, let value, let packets):
                try item.encode(characteristic, forKey: .notify)
                try item.encode(HexData(value), forKey: .value)
                try item.encodeIfPresent(packets, forKey: .packets)
            case .echo(let characteristic): try item.encode(characteristic, forKey: .echo)
            case .setValue(let characteristic, let value):
                try item.encode(characteristic, forKey: .setValue)
                try item.encode(HexData(value), forKey: .value)
            case .reply(let value): try item.encode(HexData(value), forKey: .reply)
            case .attError(let code): try item.encode(code, forKey: .attError)
            case .disconnect: try item.encode(true, forKey: .disconnect)
            }
        }
        try container.encode(latencyMilliseconds, forKey: .latency)
    }
}
