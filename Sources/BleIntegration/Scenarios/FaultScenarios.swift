import BleCore
import BleDBus
import Foundation

/// Faults the real stack produces: the daemon restarting under a connection, the central's
/// adapter powered off and on, the peer's controller going away mid-link, and a connect to a
/// peripheral that is no longer there.
enum FaultScenarios {
    static let all: [IntegrationScenario] = [daemonRestart, adapterPowerCycle, linkLoss, deviceGone, advertisingEndsLinkStays]

    static let advertisingEndsLinkStays = IntegrationScenario(
        "peripheral.advertisingEndsLinkStays", "The peer stops advertising while connected: the link and its GATT stay usable, and the peer is no longer found by a new scan."
    ) { context in
        let (peer, central, peripheral) = try await context.connectedPeer()
        try await peer.unregisterAdvertisement()
        context.step("peer stopped advertising")
        let data = try context.characteristic(peripheral, PeerProtocol.data)
        try context.expect(try await context.write(peripheral, Data([0x77]), data) == nil, "write after the advertisement ended failed")
        try context.expect(try await context.read(peripheral, data).get() == Data([0x77]), "read after the advertisement ended failed")
        context.step("state \(peripheral.state)")
        try await context.disconnect(central, peripheral)
        try await CentralScenarios.forgetPeer(context)
        do {
            _ = try await context.discoverPeer(central, within: .seconds(9), label: "scan after the advertisement ended")
            throw ScenarioFailure("the peer was found after it stopped advertising")
        } catch is CentralProbe.Timeout {
            context.step("scan after the advertisement ended: peer not reported")
        }
    }

    static let daemonRestart = IntegrationScenario(
        "fault.daemonRestart", "bluetoothd restarts (SIGTERM) under a connection: BleKit reports the loss and resetting, recovers, and reconnects."
    ) { context in
        let (peer, central, peripheral) = try await context.connectedPeer()
        let mark = context.probe.mark
        try await context.backend.restartDaemon()
        context.step("daemon restarted")
        try await context.waitForDisconnect(peripheral, since: mark, label: "restart")
        try await context.probe.wait(since: mark, timeout: context.eventDeadline, "poweredOn after the restart") {
            if case .state(.poweredOn) = $0 { return true }
            return false
        }
        let states = context.probe.events.dropFirst(mark).compactMap { event -> String? in
            if case .state(let state) = event { return "\(state)" }
            return nil
        }
        context.step("central states \(states)")
        // A restarted daemon has forgotten the application and the advertisement.
        try await peer.register()
        context.step("peer registered again")
        let again = try await context.discoverPeer(central, label: "scan after restart")
        try context.expect(try await context.connect(central, again, label: "reconnect") == nil, "reconnect after the restart failed")
        try await context.resolve(again)
        try context.expect((try? await context.read(again, try context.characteristic(again, PeerProtocol.data)).get()) != nil, "read failed")
        try await context.disconnect(central, again)
    }

    static let adapterPowerCycle = IntegrationScenario(
        "fault.adapterPowerCycle", "The central's adapter is powered off under a connection, then on: poweredOff, the link reported lost, then a reconnect."
    ) { context in
        let (_, central, peripheral) = try await context.connectedPeer()
        let mark = context.probe.mark
        try await context.setPowered(context.backend.centralAdapter, false)
        try await context.waitForDisconnect(peripheral, since: mark, label: "power off")
        try await context.probe.wait(since: mark, timeout: context.eventDeadline, "poweredOff") {
            if case .state(.poweredOff) = $0 { return true }
            return false
        }
        context.step("central state \(central.state)")
        let on = context.probe.mark
        try await context.setPowered(context.backend.centralAdapter, true)
        try await context.probe.wait(since: on, timeout: context.eventDeadline, "poweredOn") {
            if case .state(.poweredOn) = $0 { return true }
            return false
        }
        context.step("central state \(central.state)")
        try await CentralScenarios.forgetPeer(context)
        let again = try await context.discoverPeer(central, label: "scan after power on")
        try context.expect(try await context.connect(central, again, label: "reconnect") == nil, "reconnect failed")
        try await context.disconnect(central, again)
    }

    static let linkLoss = IntegrationScenario(
        "fault.linkLoss", "The peer's controller is powered off mid-link: the central hears the link drop with the reason, and operations fail cleanly."
    ) { context in
        let (peer, central, peripheral) = try await context.connectedPeer()
        let data = try context.characteristic(peripheral, PeerProtocol.data)
        let mark = context.probe.mark
        try await context.setPowered(context.backend.peripheralAdapter, false)
        try await context.waitForDisconnect(peripheral, since: mark, label: "link loss")
        context.step("state after link loss \(peripheral.state)")
        let read = try await context.read(peripheral, data, label: "read after link loss")
        try context.expect((try? read.get()) == nil, "a read on a lost link succeeded")
        try await context.setPowered(context.backend.peripheralAdapter, true)
        await peer.unregister()
        try await peer.register()
        _ = central
    }

    static let deviceGone = IntegrationScenario(
        "fault.deviceGone", "A connect to a peripheral that was seen but has gone away fails with an error, within BleKit's connect deadline."
    ) { context in
        let peer = try await context.peer()
        let central = try await context.central { options in
            options.connectTimeout = .seconds(15)
            options.connectRetries = 0
        }
        let peripheral = try await context.discoverPeer(central)
        await peer.unregister()
        try await context.setPowered(context.backend.peripheralAdapter, false)
        context.step("peer gone")
        let error = try await context.connect(central, peripheral)
        try context.expect(error != nil, "a connect to a vanished peripheral succeeded")
        context.step("state \(peripheral.state)")
        try await context.setPowered(context.backend.peripheralAdapter, true)
    }
}
