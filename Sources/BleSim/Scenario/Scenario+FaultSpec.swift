extension Scenario {
    /// One fault in a scenario file: exactly one of `connect`, `linkLoss`, `attError`,
    /// `notifications`, `neverReply` or `accessDenied` says which, with only the keys that kind reads.
    public enum FaultSpec: Sendable, Decodable, Equatable {
        /// `{"connect": ADDRESS, "failure": "abortByLocal|inProgress|neverAnswer|timeout", "times": N}`
        case connect(address: String, failure: FaultInjector.ConnectFailure, times: Int?)
        /// `{"linkLoss": ADDRESS, "afterPackets": N}`
        case linkLoss(address: String, afterPackets: Int)
        /// `{"attError": ADDRESS, "characteristic": UUID, "operation": "read|write", "code": 14, "times": N}`
        case attError(address: String, characteristic: String, operation: FaultInjector.Operation, code: UInt8, times: Int?)
        /// `{"notifications": ADDRESS, "dropEvery": N}` or `{"notifications": ADDRESS, "duplicate": true}`
        /// or `{"notifications": ADDRESS, "reorder": true}`
        case notifications(address: String, fault: FaultInjector.NotificationFault)
        /// `{"neverReply": MEMBER, "times": N}`
        case neverReply(member: String, times: Int?)
        /// `{"accessDenied": true}`
        case accessDenied

        private enum Keys: String, CodingKey, CaseIterable {
            case connect, linkLoss, attError, notifications, neverReply, accessDenied
            case failure, times, afterPackets, characteristic, operation, code, dropEvery, duplicate, reorder
        }

        /// Reads one fault; `times` (how many times it fires, every time when absent) is 1 or more.
        public init(from decoder: Decoder) throws {
            let kind = try decoder.scenarioChoice([Keys.connect, .linkLoss, .attError, .notifications, .neverReply, .accessDenied])
            let accepted: [Keys] = switch kind {
            case .connect: [kind, .failure, .times]
            case .linkLoss: [kind, .afterPackets]
            case .attError: [kind, .characteristic, .operation, .code, .times]
            case .notifications: [kind, .dropEvery, .duplicate, .reorder]
            case .neverReply: [kind, .times]
            default: [kind]
            }
            try decoder.refuseUnknownKeys(accepting: accepted.map(\.stringValue))
            let container = try decoder.container(keyedBy: Keys.self)
            func required<Value>(_ value: Value?, _ key: Keys) throws -> Value {
                guard let value else { throw ScenarioProblem.missingKey(path: ScenarioPath(decoder.codingPath), key: key.stringValue) }
                return value
            }
            switch kind {
            case .connect:
                self = .connect(address: try container.address(.connect),
                                failure: try required(container.name(FaultInjector.ConnectFailure.self, .failure), .failure),
                                times: try container.integer(Int.self, .times, .count))
            case .linkLoss:
                self = .linkLoss(address: try container.address(.linkLoss),
                                 afterPackets: try required(container.integer(Int.self, .afterPackets, .afterPackets), .afterPackets))
            case .attError:
                self = .attError(address: try container.address(.attError), characteristic: try container.uuid(.characteristic),
                                 operation: try required(container.name(FaultInjector.Operation.self, .operation), .operation),
                                 code: try required(container.integer(UInt8.self, .code, .attErrorCode), .code),
                                 times: try container.integer(Int.self, .times, .count))
            case .notifications:
                let address = try container.address(.notifications)
                let what = try decoder.scenarioChoice([Keys.dropEvery, .duplicate, .reorder], accepted: accepted)
                switch what {
                case .dropEvery:
                    self = .notifications(address: address,
                                          fault: .dropEvery(try required(container.integer(Int.self, .dropEvery, .count), .dropEvery)))
                case .duplicate:
                    try container.marker(.duplicate)
                    self = .notifications(address: address, fault: .duplicate)
                default:
                    try container.marker(.reorder)
                    self = .notifications(address: address, fault: .reorderPairs)
                }
            case .neverReply:
                let member = try container.decode(String.self, forKey: .neverReply)
                guard !member.isEmpty else {
                    throw ScenarioProblem.invalidValue(path: container.path(.neverReply), value: member,
                                                       reason: "neverReply needs a D-Bus method name, like ReadValue")
                }
                self = .neverReply(member: member, times: try container.integer(Int.self, .times, .count))
            default:
                try container.marker(.accessDenied)
                self = .accessDenied
            }
        }
    }
}
