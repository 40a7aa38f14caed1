import BleCore
import Foundation

/// The CLI's central: a `CentralManager` whose callbacks arrive as events, with a deadline on
/// every wait and failures turned into messages that say what to do.
@MainActor
final class CentralSession {
    let manager: CentralManager
    let inbox = EventInbox<CentralEvent>()
    private let relay: CentralEventRelay
    private let spinner = Spinner()
    private var signalSources: [any DispatchSourceSignal] = []
    /// The peripherals found so far, by address.
    private(set) var known: [String: (peripheral: Peripheral, advertisement: AdvertisementData, rssi: Int)] = [:]
    /// The names devices were heard by in this and earlier runs.
    private(set) var names = NameMemory()
    private let invocation: Invocation
    /// The adapter's address, once it is powered on: the names are remembered per adapter.
    private var adapterAddress: String?
    /// The name memory could not be written: warned about once.
    private var savingFailed = false

    private init(invocation: Invocation) {
        self.invocation = invocation
        let options = invocation.global.centralOptions
        relay = CentralEventRelay(inbox: inbox)
        manager = CentralManager(delegate: relay, queue: nil, options: options)
        let inbox = self.inbox
        signalSources = Termination.observe { inbox.post(.interrupted) }
    }

    /// A central on the invocation's bus and adapter, once its adapter is powered on.
    static func open(_ invocation: Invocation, timeout: Double = 5) async throws(CLIError) -> CentralSession {
        let session = CentralSession(invocation: invocation)
        do {
            try await session.waitUntilPoweredOn(timeout: timeout, adapter: invocation.global.adapter)
        } catch {
            session.close()
            throw error
        }
        session.adapterAddress = session.manager.adapterAddress
        return session
    }

    private func waitUntilPoweredOn(timeout: Double, adapter: String?) async throws(CLIError) {
        let deadline = Date().addingTimeInterval(timeout)
        spinner.start("waiting for bluetoothd", deadline: deadline)
        defer { spinner.stop() }
        while true {
            switch manager.state {
            case .poweredOn: return
            case .unknown, .resetting: break
            case .poweredOff:
                throw CLIError("the adapter \(manager.adapterName ?? adapter ?? "") is powered off. Power it on: `bluetoothctl power on` (and `rfkill unblock bluetooth` if it is blocked).", .poweredOff)
            case .unauthorized:
                throw CLIError(manager.stateError?.description ?? "the D-Bus policy refuses this user access to bluetoothd. Add the user to the 'bluetooth' group (`sudo usermod -aG bluetooth $USER`, log in again).", .permissionDenied)
            case .unsupported:
                throw Self.unavailable(manager.stateError, adapter: adapter)
            }
            guard let event = await inbox.next(before: deadline) else {
                throw CLIError("bluetoothd did not answer within \(Int(timeout)) s. Is it running? `systemctl status bluetooth`; with BleSim, pass the address `blekit sim` printed as --bus ADDRESS.", .unavailable)
            }
            if case .interrupted = event { throw CLIError("interrupted", .failure) }
        }
    }

    private static func unavailable(_ error: BleError?, adapter: String?) -> CLIError {
        switch error {
        case .accessDenied?: return CLIError(error?.description ?? "", .permissionDenied)
        case .serviceUnknown?, .noBus?: return CLIError(error?.description ?? "", .unavailable)
        default:
            if let adapter { return CLIError("there is no Bluetooth adapter '\(adapter)'. `bluetoothctl list` shows the adapters; omit --adapter to use the first one.", .unavailable) }
            return CLIError("there is no Bluetooth adapter. Plug one in (or `modprobe btusb`), check `bluetoothctl list`; to try BleKit without one, run `blekit sim` and pass its address with --bus.", .unavailable)
        }
    }

    /// Stops scanning, disconnects and releases the manager.
    func close() {
        saveNames()
        spinner.stop()
        signalSources.forEach { $0.cancel() }
        signalSources = []
        manager.stopScan()
        manager.close()
    }

    /// Writes what was learned; a failure is a warning (once), the command itself worked.
    private func saveNames() {
        rememberRenames()
        do throws(NameMemory.SaveError) {
            try names.save()
        } catch {
            if !savingFailed { invocation.fail("warning: \(error.description)") }
            savingFailed = true
        }
    }

    // MARK: waiting

    /// Waits for the event `match` accepts; nil from `match` skips an event. Fails on the
    /// deadline, on SIGINT, and when `peripheral` (if given) disconnects.
    func wait<T>(_ what: String, seconds: Double, peripheral: Peripheral? = nil,
                 _ match: (CentralEvent) throws(CLIError) -> T?) async throws(CLIError) -> T {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            guard let event = await inbox.next(before: deadline) else {
                throw CLIError("no answer to \(what) within \(Self.format(seconds)) s; the device may be out of range or stuck. Retry, or raise --timeout.", .timeout)
            }
            record(event)
            if case .interrupted = event { throw CLIError("interrupted while waiting for \(what)", .failure) }
            if let found = try match(event) { return found }
            if let peripheral, case .disconnected(let gone, let error) = event, gone === peripheral {
                throw CLIError("\(peripheral.address) disconnected during \(what)\(error.map { ": \(Self.describe($0))" } ?? ""). Reconnect and retry.", .deviceNotFound)
            }
        }
    }

    /// Keeps the names BlueZ gave connected devices since the last look.
    private func rememberRenames() {
        guard let adapterAddress else { return }
        for (address, name) in relay.takeNames() { names.remember(name, address: address, adapter: adapterAddress) }
    }

    /// Keeps what a discovery or connection event tells, for commands that look a device up by name.
    func record(_ event: CentralEvent) {
        rememberRenames()
        if case .discovered(let peripheral, let advertisement, let rssi) = event {
            known[peripheral.address] = (peripheral, advertisement, rssi)
            if let name = advertisement.localName, let adapterAddress { names.remember(name, address: peripheral.address, adapter: adapterAddress) }
            // BlueZ's own name for it: after a connection the GAP Device Name, until bluetoothd
            // takes a complete advertised name back at the next advertisement.
            if let name = peripheral.name, let adapterAddress { names.remember(name, address: peripheral.address, adapter: adapterAddress) }
        }
        if case .connected(let peripheral) = event, let name = peripheral.name, let adapterAddress {
            names.remember(name, address: peripheral.address, adapter: adapterAddress)
        }
    }

    static func format(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? String(Int(seconds)) : String(format: "%.1f", seconds)
    }

    /// A BleKit error's own message (which says what to do), or the error's description.
    static func describe(_ error: Error) -> String {
        (error as? BleError)?.description ?? "\(error)"
    }

    /// The exit status that fits a BleKit error.
    static func exitCode(for error: Error?) -> ExitCode {
        switch error as? BleError {
        case .poweredOff?, .notReady?: return .poweredOff
        case .accessDenied?, .notAuthorized?: return .permissionDenied
        case .serviceUnknown?, .noBus?, .bluetoothRestarted?: return .unavailable
        case .deviceGone?, .disconnected?, .notConnected?, .peripheralNotConnected?: return .deviceNotFound
        case .timeout?, .connectionTimeout?: return .timeout
        default: return .failure
        }
    }

    /// A failed step as a CLI error.
    static func failure(_ what: String, _ error: Error) -> CLIError {
        CLIError("\(what) failed: \(describe(error))", exitCode(for: error))
    }

    // MARK: steps

    /// True when `target` names `peripheral`: its address, its BleKit identifier, the name it
    /// advertises or BlueZ gives it, or a name it was heard by before (BlueZ forgets the
    /// advertised name once it has read the GAP name on connecting).
    func matches(_ target: String, _ peripheral: Peripheral, advertised: String?) -> Bool {
        if peripheral.address.uppercased() == target.uppercased() { return true }
        if let identifier = UUID(uuidString: target), identifier == peripheral.identifier { return true }
        if advertised == target || peripheral.name == target { return true }
        if let adapterAddress, let address = names.address(of: target, adapter: adapterAddress) { return address == peripheral.address.uppercased() }
        return false
    }

    /// Finds the device by address, identifier or name: one already connected (by any program:
    /// BlueZ shares the link, and a connected device usually stops advertising) at once, else the
    /// first that advertises before `seconds` pass.
    func find(_ target: String, seconds: Double, connected: Bool = true) async throws(CLIError) -> Peripheral {
        if connected, let linked = manager.retrieveConnectedPeripherals(withServices: []).first(where: { matches(target, $0, advertised: nil) }) {
            return linked
        }
        let deadline = Date().addingTimeInterval(seconds)
        spinner.start("looking for \(target)", deadline: deadline)
        defer { spinner.stop() }
        manager.scanForPeripherals(withServices: nil, options: ScanOptions(allowDuplicates: false, transport: .auto))
        defer { manager.stopScan() }
        do {
            let found = try await wait("the scan for \(target)", seconds: seconds) { event throws(CLIError) in
                switch event {
                case .discovered(let peripheral, let advertisement, _):
                    return matches(target, peripheral, advertised: advertisement.localName) ? peripheral : nil
                case .scanFailed(let error):
                    throw Self.failure("the scan", error)
                case .state(let state) where state != .poweredOn:
                    throw CLIError("the adapter went \(state) during the scan. Power it on and retry.", state == .poweredOff ? .poweredOff : .unavailable)
                default:
                    return nil
                }
            }
            // Whatever BlueZ calls it after connecting, the name it was found by finds it again,
            // from now on: written at once, since this run may hold the link for a long time.
            if let adapterAddress, found.address.uppercased() != target.uppercased(), UUID(uuidString: target) == nil {
                names.remember(target, address: found.address, adapter: adapterAddress)
            }
            saveNames()
            return found
        } catch where error.exitCode == .timeout {
            let remembered = adapterAddress.flatMap { names.address(of: target, adapter: $0) }.map { " (last heard as \(target) at \($0))" } ?? ""
            throw CLIError("\(target)\(remembered) was not found within \(Self.format(seconds)) s. Is it advertising and in range? `blekit scan` lists what is heard; raise --timeout for slow advertisers.", .deviceNotFound)
        }
    }

    /// Connects (BleKit retries transient failures itself).
    func connect(_ peripheral: Peripheral, seconds: Double) async throws(CLIError) {
        peripheral.delegate = relay
        if peripheral.state == .connected { return }
        let deadline = Date().addingTimeInterval(seconds)
        spinner.start("connecting to \(peripheral.address)", deadline: deadline)
        defer { spinner.stop() }
        manager.connect(peripheral)
        try await wait("connect", seconds: seconds) { (event: CentralEvent) throws(CLIError) -> Void? in
            switch event {
            case .connected(let connected) where connected === peripheral: return ()
            case .failedToConnect(let failed, let error) where failed === peripheral:
                throw Self.failure("connecting to \(peripheral.address)", error ?? BleError.connectionAttemptFailed)
            default: return nil
            }
        }
    }

    /// Discovers every service, characteristic and descriptor.
    func discoverAll(_ peripheral: Peripheral, seconds: Double) async throws(CLIError) -> [Service] {
        spinner.start("discovering \(peripheral.address)'s services", deadline: nil)
        defer { spinner.stop() }
        peripheral.discoverServices(nil)
        try await wait("service discovery", seconds: seconds, peripheral: peripheral) { (event: CentralEvent) throws(CLIError) -> Void? in
            guard case .servicesDiscovered(let discovered, let error) = event, discovered === peripheral else { return nil }
            if let error { throw Self.failure("service discovery", error) }
            return ()
        }
        let services = peripheral.services ?? []
        for service in services {
            peripheral.discoverCharacteristics(nil, for: service)
            try await wait("characteristic discovery", seconds: seconds, peripheral: peripheral) { (event: CentralEvent) throws(CLIError) -> Void? in
                guard case .characteristicsDiscovered(let discovered, let error) = event, discovered === service else { return nil }
                if let error { throw Self.failure("characteristic discovery", error) }
                return ()
            }
            for characteristic in service.characteristics ?? [] {
                peripheral.discoverDescriptors(for: characteristic)
                try await wait("descriptor discovery", seconds: seconds, peripheral: peripheral) { (event: CentralEvent) throws(CLIError) -> Void? in
                    guard case .descriptorsDiscovered(let discovered, let error) = event, discovered === characteristic else { return nil }
                    if let error { throw Self.failure("descriptor discovery", error) }
                    return ()
                }
            }
        }
        return services
    }

    /// Reads a characteristic's value.
    func read(_ characteristic: Characteristic, on peripheral: Peripheral, seconds: Double) async throws(CLIError) -> Data {
        peripheral.readValue(for: characteristic)
        return try await wait("the read of \(characteristic.uuid)", seconds: seconds, peripheral: peripheral) { event throws(CLIError) in
            guard case .valueUpdated(let updated, let value, let error) = event, updated === characteristic else { return nil }
            if let error { throw Self.failure("reading \(characteristic.uuid)", error) }
            return value ?? Data()
        }
    }

    /// Writes a characteristic's value and fails unless BleKit reports it done: with a response
    /// the peripheral's acknowledgement, without one the packet handed to BlueZ.
    func write(_ data: Data, to characteristic: Characteristic, on peripheral: Peripheral, withResponse: Bool, seconds: Double) async throws(CLIError) {
        let what = "the write\(withResponse ? "" : " without response") to \(characteristic.uuid)"
        // The write's own answer, not the delegate's: a write without response BleKit refuses
        // (too long for the link, not connected) has no acknowledgement to wait for, and
        // `canSendWriteWithoutResponse` stays true, so only this answer tells that nothing was sent.
        await Self.submit(data, to: characteristic, on: peripheral, type: withResponse ? .withResponse : .withoutResponse, inbox: inbox)
        try await wait(what, seconds: seconds, peripheral: peripheral) { (event: CentralEvent) throws(CLIError) -> Void? in
            guard case .writeAnswered(let answered, let error) = event, answered === characteristic else { return nil }
            if let error { throw Self.failure("writing \(characteristic.uuid)", error) }
            return ()
        }
        guard !withResponse else { return }
        // Queued is not sent: the packet must leave BleKit (AcquireWrite socket, or its command
        // answered by bluetoothd) before the program closes its connection, else it vanishes with
        // it, and a command bluetoothd refuses comes back as a late `didWriteValueFor` error.
        // BleKit signals readiness only after it once saw itself not ready: a lone command write
        // to a characteristic without AcquireWrite (BlueZ before 5.46 offers none) gets no
        // `peripheralIsReady`, so the backlog is looked at again every 10 ms until the deadline.
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            // Read before the events: once it is true, every late error is already in the inbox.
            let sent = peripheral.canSendWriteWithoutResponse
            guard let event = await inbox.next(before: sent ? .distantPast : min(deadline, Date().addingTimeInterval(0.01))) else {
                if sent { return }
                guard Date() < deadline else {
                    throw CLIError("\(what) was still queued in BleKit after \(Self.format(seconds)) s; it may not have been sent. Retry, or raise --timeout.", .timeout)
                }
                continue
            }
            record(event)
            switch event {
            case .valueWritten(let written, let error?) where written === characteristic:
                throw Self.failure("writing \(characteristic.uuid)", error)
            case .disconnected(let gone, let error) where gone === peripheral:
                throw CLIError("\(peripheral.address) disconnected during \(what)\(error.map { ": \(Self.describe($0))" } ?? ""); the value may not have been sent. Reconnect and retry.", .deviceNotFound)
            case .interrupted:
                throw CLIError("interrupted during \(what); the value may not have been sent", .failure)
            default:
                continue
            }
        }
    }

    @BleLoop private static func submit(_ data: Data, to characteristic: Characteristic, on peripheral: Peripheral,
                                        type: CharacteristicWriteType, inbox: EventInbox<CentralEvent>) {
        peripheral.performWrite(data, characteristic, type) { error in inbox.post(.writeAnswered(characteristic, error)) }
    }

    /// Reads a descriptor's value.
    func read(_ descriptor: Descriptor, on peripheral: Peripheral, seconds: Double) async throws(CLIError) -> Data? {
        peripheral.readValue(for: descriptor)
        return try await wait("the read of descriptor \(descriptor.uuid)", seconds: seconds, peripheral: peripheral) { event throws(CLIError) in
            guard case .descriptorValueUpdated(let updated, let error) = event, updated === descriptor else { return nil }
            if let error { throw Self.failure("reading descriptor \(descriptor.uuid)", error) }
            return .some(descriptor.value)
        }
    }

    /// Turns notifications (or indications) on or off.
    func setNotify(_ enabled: Bool, _ characteristic: Characteristic, on peripheral: Peripheral, seconds: Double) async throws(CLIError) {
        peripheral.setNotifyValue(enabled, for: characteristic)
        try await wait("turning notifications \(enabled ? "on" : "off")", seconds: seconds, peripheral: peripheral) { (event: CentralEvent) throws(CLIError) -> Void? in
            guard case .notificationState(let changed, let error) = event, changed === characteristic else { return nil }
            if let error { throw Self.failure("turning notifications \(enabled ? "on" : "off") for \(characteristic.uuid)", error) }
            return ()
        }
    }

    /// Disconnects and waits (briefly) for it to be done.
    func disconnect(_ peripheral: Peripheral) async {
        guard peripheral.state != .disconnected else { return }
        manager.cancelPeripheralConnection(peripheral)
        _ = try? await wait("disconnect", seconds: 5) { (event: CentralEvent) -> Void? in
            if case .disconnected(let gone, _) = event, gone === peripheral { return () }
            return nil
        }
    }
}
