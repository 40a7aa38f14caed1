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

    private enum CodingKeys: String, CodingKey, CaseIterable { case on, then, latency }
    private enum TriggerKeys: String, CodingKey, CaseIterable { case write, read, subscribe, connect, every, prefix }
    private enum ResponseKeys: String, CodingKey, CaseIterable { case notify, echo, setValue, reply, attError, disconnect, value, packets }

    /// JSON: `{"on": {"write": "fff1", "prefix": "01"}, "then": [{"notify": "fff2", "value": "0102", "packets": 2}], "latency": 10}`.
    /// `on` holds exactly one trigger and each response exactly one action, with only the keys
    /// that action reads; anything else is a `ScenarioProblem` naming the place.
    public init(from decoder: Decoder) throws {
        let container = try decoder.scenarioObject(CodingKeys.self)
        trigger = try container.decode(TriggerEntry.self, forKey: .on).trigger
        responses = try container.decode([ResponseEntry].self, forKey: .then).map(\.response)
        latencyMilliseconds = try container.number(.latency, .delay) ?? 0
    }

    /// A rule's `on`: `{"write": UUID, "prefix": HEX}`, `{"read": UUID}`, `{"subscribe": UUID}`,
    /// `{"connect": true}` or `{"every": MS}`.
    private struct TriggerEntry: Decodable {
        var trigger: Trigger

        init(from decoder: Decoder) throws {
            let kind = try decoder.scenarioChoice([TriggerKeys.write, .read, .subscribe, .connect, .every])
            try decoder.refuseUnknownKeys(accepting: (kind == .write ? [kind, .prefix] : [kind]).map(\.stringValue))
            let on = try decoder.container(keyedBy: TriggerKeys.self)
            switch kind {
            case .write: trigger = .write(characteristic: try on.uuid(.write), prefix: try on.decodeIfPresent(HexData.self, forKey: .prefix)?.data)
            case .read: trigger = .read(characteristic: try on.uuid(.read))
            case .subscribe: trigger = .subscribe(characteristic: try on.uuid(.subscribe))
            case .connect:
                try on.marker(.connect)
                trigger = .connect
            case .every, .prefix:
                guard let every = try on.number(.every, .period) else {
                    throw ScenarioProblem.wrongType(path: on.path(.every), expected: "a number of milliseconds", found: "null")
                }
                trigger = .periodic(milliseconds: every)
            }
        }
    }

    /// One of a rule's `then`: `{"notify": UUID, "value": HEX, "packets": N}`, `{"echo": UUID}`,
    /// `{"setValue": UUID, "value": HEX}`, `{"reply": HEX}`, `{"attError": CODE}` or `{"disconnect": true}`.
    private struct ResponseEntry: Decodable {
        var response: Response

        init(from decoder: Decoder) throws {
            let kind = try decoder.scenarioChoice([ResponseKeys.notify, .echo, .setValue, .reply, .attError, .disconnect])
            let accepted: [ResponseKeys] = switch kind {
            case .notify: [kind, .value, .packets]
            case .setValue: [kind, .value]
            default: [kind]
            }
            try decoder.refuseUnknownKeys(accepting: accepted.map(\.stringValue))
            let item = try decoder.container(keyedBy: ResponseKeys.self)
            switch kind {
            case .notify:
                response = .notify(characteristic: try item.uuid(.notify), value: try item.decode(HexData.self, forKey: .value).data,
                                   packets: try item.integer(Int.self, .packets, .count))
            case .echo: response = .echo(characteristic: try item.uuid(.echo))
            case .setValue: response = .setValue(characteristic: try item.uuid(.setValue), value: try item.attributeValue(.value))
            case .reply: response = .reply(value: try item.attributeValue(.reply))
            case .attError, .value, .packets:
                guard let code = try item.integer(UInt8.self, .attError, .attErrorCode) else {
                    throw ScenarioProblem.wrongType(path: item.path(.attError), expected: "an ATT error code", found: "null")
                }
                response = .attError(code: code)
            case .disconnect:
                try item.marker(.disconnect)
                response = .disconnect
            }
        }
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
