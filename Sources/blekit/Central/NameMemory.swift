import Foundation

/// The names devices were heard by, remembered across runs, so that `blekit read MyDevice`
/// finds MyDevice again after a connection: bluetoothd replaces a device's advertised `Name`
/// (and `Alias`) with the GAP Device Name it reads on connecting, and BleKit's name is BlueZ's.
/// One JSON file, `$XDG_CACHE_HOME/blekit/names.json` (else `~/.cache/...`), per adapter address.
struct NameMemory {
    /// Where a device was last heard under a name.
    struct Sighting: Codable, Equatable {
        /// The device's address.
        var address: String
        /// When, in seconds since 1970: the oldest are forgotten first.
        var seen: Double
    }

    /// Why the names could not be kept: said once, as a warning, since the command itself worked.
    struct SaveError: Error, CustomStringConvertible {
        let description: String
    }

    /// The most names kept per adapter.
    static let capacity = 512

    /// The file, or nil when there is no home directory to keep it in.
    let path: String?
    /// Adapter address → name → where it was last heard.
    private(set) var names: [String: [String: Sighting]] = [:]
    private var changed = false

    /// The file's place from the environment: `XDG_CACHE_HOME`, else `HOME/.cache`.
    static func defaultPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        if let cache = environment["XDG_CACHE_HOME"], cache.hasPrefix("/") { return cache + "/blekit/names.json" }
        guard let home = environment["HOME"], !home.isEmpty else { return nil }
        return home + "/.cache/blekit/names.json"
    }

    /// Reads the remembered names; a missing or unreadable file is an empty memory (it is a cache).
    init(path: String? = NameMemory.defaultPath()) {
        self.path = path
        guard let path, let data = FileManager.default.contents(atPath: path),
              let decoded = try? JSONDecoder().decode([String: [String: Sighting]].self, from: data) else { return }
        names = decoded
    }

    /// The address last heard under `name` through the adapter with address `adapter`.
    func address(of name: String, adapter: String) -> String? {
        names[adapter.uppercased()]?[name]?.address
    }

    /// Notes that the device at `address` was heard as `name`.
    mutating func remember(_ name: String, address: String, adapter: String, now: Date = Date()) {
        let key = adapter.uppercased()
        let sighting = Sighting(address: address.uppercased(), seen: now.timeIntervalSince1970)
        guard names[key]?[name]?.address != sighting.address else { return }
        names[key, default: [:]][name] = sighting
        if let kept = names[key], kept.count > Self.capacity {
            let oldest = kept.sorted { $0.value.seen < $1.value.seen }.prefix(kept.count - Self.capacity).map(\.key)
            oldest.forEach { names[key]?[$0] = nil }
        }
        changed = true
    }

    /// Writes the file if anything new was learned.
    mutating func save() throws(SaveError) {
        guard changed, let path else { return }
        do {
            let directory = (path as NSString).deletingLastPathComponent
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let data = try JSONEncoder().encode(names)
            try data.write(to: URL(fileURLWithPath: path), options: .atomic)
            changed = false
        } catch {
            throw SaveError(description: "could not remember device names in \(path) (\(error.localizedDescription)); names seen only before a connection may not resolve next time. Check that the directory is writable, or set XDG_CACHE_HOME.")
        }
    }
}
