#!/usr/bin/python3 -u
# probe-peripheral.py ADAPTER: a GATT application + advertisement on ADAPTER
# (e.g. /org/bluez/hci0) for the probes in this folder. One service ff00 with a
# characteristic ff01 [read, notify] that, while notifying, sends a counter
# every 300 ms. Logs every call it gets, one line each, to stdout.
import sys, time, signal
import dbus, dbus.service, dbus.mainloop.glib
from gi.repository import GLib

BLUEZ = 'org.bluez'
START = time.monotonic()
def log(*a): print('periph [%6.2f]' % (time.monotonic() - START), *a, flush=True)

def uuid16(u): return '0000%s-0000-1000-8000-00805f9b34fb' % u

class Characteristic(dbus.service.Object):
    def __init__(self, bus, path, service):
        super().__init__(bus, path)
        self.path, self.service, self.notifying, self.counter, self.timer = path, service, False, 0, None
    def props(self):
        return {'org.bluez.GattCharacteristic1': {
            'Service': dbus.ObjectPath(self.service), 'UUID': uuid16('ff01'),
            'Flags': dbus.Array(['read', 'notify'], signature='s')}}
    @dbus.service.method('org.freedesktop.DBus.Properties', in_signature='s', out_signature='a{sv}')
    def GetAll(self, interface): return self.props()[interface]
    @dbus.service.method('org.bluez.GattCharacteristic1', in_signature='a{sv}', out_signature='ay')
    def ReadValue(self, options):
        log('ReadValue', dict(options)); return dbus.Array([dbus.Byte(self.counter & 0xff)], signature='y')
    @dbus.service.method('org.bluez.GattCharacteristic1')
    def StartNotify(self):
        log('StartNotify'); self.notifying = True
        if self.timer is None: self.timer = GLib.timeout_add(300, self.tick)
    @dbus.service.method('org.bluez.GattCharacteristic1')
    def StopNotify(self):
        log('StopNotify'); self.notifying = False
    @dbus.service.signal('org.freedesktop.DBus.Properties', signature='sa{sv}as')
    def PropertiesChanged(self, interface, changed, invalidated): pass
    def tick(self):
        if not self.notifying: self.timer = None; return False
        self.counter += 1
        self.PropertiesChanged('org.bluez.GattCharacteristic1',
                               {'Value': dbus.Array([dbus.Byte(self.counter & 0xff)], signature='y')}, [])
        return True

class Service(dbus.service.Object):
    def __init__(self, bus, path):
        super().__init__(bus, path); self.path = path
    def props(self):
        return {'org.bluez.GattService1': {'UUID': uuid16('ff00'), 'Primary': True}}
    @dbus.service.method('org.freedesktop.DBus.Properties', in_signature='s', out_signature='a{sv}')
    def GetAll(self, interface): return self.props()[interface]

class Application(dbus.service.Object):
    def __init__(self, bus):
        super().__init__(bus, '/probe')
        self.service = Service(bus, '/probe/service0')
        self.char = Characteristic(bus, '/probe/service0/char0', '/probe/service0')
    @dbus.service.method('org.freedesktop.DBus.ObjectManager', out_signature='a{oa{sa{sv}}}')
    def GetManagedObjects(self):
        return {dbus.ObjectPath(self.service.path): self.service.props(),
                dbus.ObjectPath(self.char.path): self.char.props()}

class Advertisement(dbus.service.Object):
    def __init__(self, bus):
        super().__init__(bus, '/probe/adv')
    @dbus.service.method('org.freedesktop.DBus.Properties', in_signature='s', out_signature='a{sv}')
    def GetAll(self, interface):
        return {'Type': 'peripheral', 'ServiceUUIDs': dbus.Array([uuid16('ff00')], signature='s'),
                'LocalName': 'probe'}
    @dbus.service.method('org.bluez.LEAdvertisement1')
    def Release(self): log('Advertisement.Release')

def main():
    adapter = sys.argv[1]
    dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
    bus = dbus.SystemBus()
    app, adv = Application(bus), Advertisement(bus)
    loop = GLib.MainLoop()
    GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGTERM, lambda: (log('SIGTERM, exiting'), loop.quit()))
    obj = bus.get_object(BLUEZ, adapter)
    dbus.Interface(obj, 'org.bluez.GattManager1').RegisterApplication(
        '/probe', {}, reply_handler=lambda: log('GATT application registered'),
        error_handler=lambda e: (log('RegisterApplication failed', e), loop.quit()))
    dbus.Interface(obj, 'org.bluez.LEAdvertisingManager1').RegisterAdvertisement(
        '/probe/adv', {}, reply_handler=lambda: log('Advertisement registered'),
        error_handler=lambda e: (log('RegisterAdvertisement failed', e), loop.quit()))
    # SIGUSR1: UnregisterApplication, the process stays (probe-fidelity.py section D).
    GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGUSR1, lambda: (log('SIGUSR1: UnregisterApplication'),
        dbus.Interface(obj, 'org.bluez.GattManager1').UnregisterApplication('/probe',
            reply_handler=lambda: log('UnregisterApplication replied'),
            error_handler=lambda e: log('UnregisterApplication failed', e)), True)[-1])
    loop.run()
    log('main loop ended; process exits')

main()
