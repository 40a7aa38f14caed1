import Foundation

/// Another service of the same peripheral that a service includes (GATT's Include
/// declaration), as a scenario file names it: `"includes": ["180f", 2]`, a UUID naming exactly
/// one other service of the device, or a 0-based index into the device's `services`.
public enum IncludedService: Sendable, Equatable, Codable {
    /// The service at this index of the device's `services` (the same list).
    case index(Int)
    /// The one other service with this UUID (any UUID form).
    case uuid(String)

    /// Reads a number (an index) or a string (a UUID); anything else is an error naming both.
    public init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let text = try? container.decode(String.self) {
            guard let full = SimUUID.full(text) else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "included service '\(text)' is not a UUID (16-, 32- or 128-bit)")
            }
            self = .uuid(full)
            return
        }
        guard let number = try? container.decode(Double.self), let index = Int(exactly: number), index >= 0 else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "an included service is a service UUID or a 0-based index into the device's services")
        }
        self = .index(index)
    }

    /// Writes the index as a number, the UUID as a string.
    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .index(let index): try container.encode(index)
        case .uuid(let uuid): try container.encode(uuid)
        }
    }

    /// Where `service`'s includes point among `services` (indices, in the service's order), or
    /// why the first one that points nowhere does.
    static func resolve(_ includes: [IncludedService], of service: Int, in services: [ServiceSpec]) -> Result<[Int], IncludeProblem> {
        var indices: [Int] = []
        for (position, include) in includes.enumerated() {
            switch include.target(position: position, of: service, in: services) {
            case .success(let index): indices.append(index)
            case .failure(let problem): return .failure(problem)
            }
        }
        return .success(indices)
    }

    /// The index among `services` this include (entry `position` of service `service`) names,
    /// or why it names none: not a service of the list, the service itself, or a UUID several
    /// services share (name it by index then).
    func target(position: Int, of service: Int, in services: [ServiceSpec]) -> Result<Int, IncludeProblem> {
        func problem(_ reason: String) -> Result<Int, IncludeProblem> {
            .failure(IncludeProblem(service: service, position: position, reason: reason))
        }
        let target: Int
        switch self {
        case .index(let index):
            guard services.indices.contains(index) else { return problem("index \(index) is not one of the device's \(services.count) services") }
            target = index
        case .uuid(let uuid):
            let wanted = SimUUID.full(uuid) ?? uuid.lowercased()
            let matches = services.indices.filter { $0 != service && (SimUUID.full(services[$0].uuid) ?? services[$0].uuid.lowercased()) == wanted }
            guard let first = matches.first else { return problem("no other service of the device has UUID \(uuid)") }
            guard matches.count == 1 else { return problem("services \(matches) all have UUID \(uuid); name the included one by its index") }
            target = first
        }
        guard target != service else { return problem("a service cannot include itself") }
        return .success(target)
    }
}

/// An include of a scenario's service that names no other service of the device.
struct IncludeProblem: Error, Equatable {
    /// The including service's index in the device's `services`.
    let service: Int
    /// The entry's index in that service's `includes`.
    let position: Int
    /// What is wrong with it.
    let reason: String

    var message: String { "services[\(service)].includes[\(position)]: \(reason)" }
}
