#!/usr/bin/python3 -u
# probe-fidelity.py: what bluetoothd 5.66 does for BleSim's fidelity items
# (issue 10, item 7). Run in the guest:
#   scripts/bluez-vm/run -- scripts/bluez-vm/probes/probe-fidelity.py
# Prints every org.bluez signal and every reply with a timestamp:
#  A. Adapter1.UUIDs and Media1 (introspection, GetAll) of both adapters.
#  B. StartNotify on a disconnected device, then a reconnect.
#  C. The app's process exits while a central is connected (SIGTERM, then a
#     second round with SIGKILL).
#  D. The app calls UnregisterApplication while a central is connected.
# PROBE_SECTIONS (default ABCD) picks sections; A always runs.
import os, sys, time, subprocess, signal
import dbus, dbus.mainloop.glib
from gi.repository import GLib

HERE = os.path.dirname(os.path.abspath(__file__))
START = time.monotonic()
def log(*a): print('probe  [%6.2f]' % (time.monotonic() - START), *a, flush=True)

dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
bus = dbus.SystemBus()
ctx = GLib.MainContext.default()
props = {}   # path -> {iface -> {name: value}}

def short(v):
    if isinstance(v, dbus.Array) and v.signature == 'y': return 'ay[%s]' % ' '.join('%02x' % b for b in v)
    if isinstance(v, dbus.Boolean): return str(bool(v))
    if isinstance(v, dbus.Array): return '[%s]' % ', '.join(short(x) for x in v)
    if isinstance(v, dbus.Dictionary): return '{%s}' % ', '.join('%s: %s' % (k, short(x)) for k, x in v.items())
    return str(v)

def on_signal(*args, **kw):
    member, path, iface = kw['member'], kw['path'], kw['interface']
    if member == 'PropertiesChanged':
        i, changed, inval = args
        props.setdefault(str(path), {}).setdefault(str(i), {}).update(changed)
        log('SIGNAL PropertiesChanged', path, i.replace('org.bluez.', ''),
            '{%s}' % ', '.join('%s: %s' % (k, short(v)) for k, v in changed.items()), list(map(str, inval)) or '')
    elif member == 'InterfacesAdded':
        p, ifs = args
        for i, d in ifs.items(): props.setdefault(str(p), {}).setdefault(str(i), {}).update(d)
        log('SIGNAL InterfacesAdded', p, [str(i).replace('org.bluez.', '') for i in ifs])
    elif member == 'InterfacesRemoved':
        p, ifs = args
        for i in ifs: props.get(str(p), {}).pop(str(i), None)
        log('SIGNAL InterfacesRemoved', p, [str(i).replace('org.bluez.', '') for i in ifs])
    else:
        log('SIGNAL', iface, member, path, args)

bus.add_signal_receiver(on_signal, sender_keyword='sender', bus_name='org.bluez', member_keyword='member',
                        path_keyword='path', interface_keyword='interface')

def spin(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end: ctx.iteration(False) or time.sleep(0.01)

def wait(pred, seconds, what):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if pred(): return True
        ctx.iteration(False) or time.sleep(0.01)
    log('TIMEOUT waiting for', what); return False

def call(path, iface, method, *args, timeout=30):
    """Asynchronous call, spinning the loop so signals are logged in order with the reply."""
    result = {}
    obj = bus.get_object('org.bluez', path)
    getattr(dbus.Interface(obj, iface), method)(*args, timeout=timeout,
        reply_handler=lambda *r: result.setdefault('ok', r),
        error_handler=lambda e: result.setdefault('err', e))
    wait(lambda: result, timeout + 1, method)
    if 'ok' in result: log('REPLY', method, path, short(dbus.Array(result['ok'])) if result['ok'] else '()')
    else:
        e = result.get('err'); log('ERROR', method, path, e.get_dbus_name() if e else None, repr(e.get_dbus_message()) if e else None)
    return result

def get(path, iface, name):
    return dbus.Interface(bus.get_object('org.bluez', path), 'org.freedesktop.DBus.Properties').Get(iface, name)

# ---- A. adapter UUIDs and Media1 -------------------------------------------------
for hci in ('/org/bluez/hci0', '/org/bluez/hci1'):
    p = dbus.Interface(bus.get_object('org.bluez', hci), 'org.freedesktop.DBus.Properties')
    log('A', hci, 'Adapter1.UUIDs =', list(map(str, p.Get('org.bluez.Adapter1', 'UUIDs'))))
    try: log('A', hci, 'Media1 GetAll =', short(p.GetAll('org.bluez.Media1')))
    except dbus.DBusException as e: log('A', hci, 'Media1 GetAll error', e.get_dbus_name(), e.get_dbus_message())
    xml = dbus.Interface(bus.get_object('org.bluez', hci), 'org.freedesktop.DBus.Introspectable').Introspect()
    log('A', hci, 'interfaces:', [l.split('"')[1] for l in xml.split('<interface ')[1:]])
om = dbus.Interface(bus.get_object('org.bluez', '/'), 'org.freedesktop.DBus.ObjectManager').GetManagedObjects()
for path, ifs in sorted(om.items()):
    log('A managed', path, [str(i) for i in ifs])
    if 'org.bluez.Media1' in ifs: log('A managed', path, 'Media1', short(ifs['org.bluez.Media1']))
    if 'org.bluez.Adapter1' in ifs: log('A managed', path, 'UUIDs', short(ifs['org.bluez.Adapter1']['UUIDs']))

# ---- peripheral on hci0, central hci1 ------------------------------------------------
PERIPHERAL, CENTRAL = '/org/bluez/hci0', '/org/bluez/hci1'
DEVICE = CENTRAL + '/dev_00_AA_01_00_00_00'

def start_peripheral():
    proc = subprocess.Popen(['/usr/bin/python3', '-u', os.path.join(HERE, 'probe-peripheral.py'), PERIPHERAL],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    os.set_blocking(proc.stdout.fileno(), False)
    GLib.io_add_watch(proc.stdout.fileno(), GLib.IO_IN | GLib.IO_HUP, lambda fd, cond: pump(proc, cond))
    proc.lines = []
    wait(lambda: sum('registered' in l for l in proc.lines) >= 2, 30, 'peripheral registration')
    log('A after app registration: hci0 UUIDs =', list(map(str, get(PERIPHERAL, 'org.bluez.Adapter1', 'UUIDs'))))
    return proc

def pump(proc, cond):
    data = proc.stdout.read() or ''
    for line in data.splitlines():
        proc.lines.append(line); log('   >', line)
    return not (cond & GLib.IO_HUP) or bool(data)

def discover():
    call(CENTRAL, 'org.bluez.Adapter1', 'SetDiscoveryFilter', {'Transport': 'le'})
    for attempt in range(8):
        call(CENTRAL, 'org.bluez.Adapter1', 'StartDiscovery')
        ok = wait(lambda: 'org.bluez.Device1' in props.get(DEVICE, {}), 5, 'device')
        call(CENTRAL, 'org.bluez.Adapter1', 'StopDiscovery')
        if ok: return True
    return False

def connect():
    call(DEVICE, 'org.bluez.Device1', 'Connect')
    return wait(lambda: bool(get(DEVICE, 'org.bluez.Device1', 'ServicesResolved')), 20, 'ServicesResolved')

def find_char():
    om = dbus.Interface(bus.get_object('org.bluez', '/'), 'org.freedesktop.DBus.ObjectManager').GetManagedObjects()
    for path, ifs in om.items():
        c = ifs.get('org.bluez.GattCharacteristic1')
        if c and str(path).startswith(DEVICE) and str(c['UUID']).startswith('0000ff01'): return str(path)
    return None

def dump_device(tag):
    om = dbus.Interface(bus.get_object('org.bluez', '/'), 'org.freedesktop.DBus.ObjectManager').GetManagedObjects()
    for path, ifs in sorted(om.items()):
        if str(path).startswith('/org/bluez/hci') and '/dev_' in str(path):
            d = ifs.get('org.bluez.Device1')
            extra = (' Connected=%s ServicesResolved=%s' % (bool(d['Connected']), bool(d['ServicesResolved']))) if d else ''
            c = ifs.get('org.bluez.GattCharacteristic1')
            if c: extra = ' Notifying=%s' % short(c.get('Notifying'))
            log(tag, path, [str(i).replace('org.bluez.', '') for i in ifs], extra)

SECTIONS = os.environ.get('PROBE_SECTIONS', 'ABCD')
periph = start_peripheral()
if not discover(): log('FAILED: not discovered'); sys.exit(1)
if not connect(): log('FAILED: connect'); sys.exit(1)
char = find_char() if 'B' in SECTIONS else None
if 'B' in SECTIONS: log('===== B. StartNotify on a disconnected device')
if char:
  log('B characteristic', char)
  dump_device('B connected:')
  call(DEVICE, 'org.bluez.Device1', 'Disconnect')
  wait(lambda: not bool(get(DEVICE, 'org.bluez.Device1', 'Connected')), 10, 'Connected=false')
  spin(1)
  dump_device('B disconnected:')
  char = find_char(); log('B characteristic after disconnect', char)
  if char:
      log('B Notifying before StartNotify:', short(get(char, 'org.bluez.GattCharacteristic1', 'Notifying')))
      call(char, 'org.bluez.GattCharacteristic1', 'StartNotify')
      spin(2)
      log('B Notifying 2 s after StartNotify:', short(get(char, 'org.bluez.GattCharacteristic1', 'Notifying')))
      call(char, 'org.bluez.GattCharacteristic1', 'StartNotify')
      log('B --- reconnecting')
      connect()
      spin(3)
      char2 = find_char(); log('B characteristic after reconnect', char2)
      if char2: log('B Notifying 3 s after reconnect:', short(get(char2, 'org.bluez.GattCharacteristic1', 'Notifying')))
      log('B --- StopNotify then StartNotify while connected, to see notifications flow')
      if char2:
          call(char2, 'org.bluez.GattCharacteristic1', 'StopNotify')
          spin(1)
      # Again but StartNotify on a disconnected device that never had a session: done above.
      # Now also: StartNotify while disconnected from a *different* state: Notifying true before disconnect.
      if char2:
          call(char2, 'org.bluez.GattCharacteristic1', 'StartNotify')
          spin(1)
          call(DEVICE, 'org.bluez.Device1', 'Disconnect')
          wait(lambda: not bool(get(DEVICE, 'org.bluez.Device1', 'Connected')), 10, 'Connected=false')
          spin(1)
          log('B2 Notifying after disconnect while notifying:', short(get(char2, 'org.bluez.GattCharacteristic1', 'Notifying')))
          call(char2, 'org.bluez.GattCharacteristic1', 'StopNotify')
          spin(1)
          log('B2 Notifying after StopNotify while disconnected:', short(get(char2, 'org.bluez.GattCharacteristic1', 'Notifying')))
          call(char2, 'org.bluez.GattCharacteristic1', 'StartNotify')
          spin(1)
          log('B2 Notifying after StartNotify while disconnected:', short(get(char2, 'org.bluez.GattCharacteristic1', 'Notifying')))
          connect(); spin(3)
          log('B2 Notifying 3 s after reconnect:', short(get(char2, 'org.bluez.GattCharacteristic1', 'Notifying')))

for round, sig in ((('C1', signal.SIGTERM), ('C2', signal.SIGKILL)) if 'C' in SECTIONS else ()):
    log('===== %s. the app process exits (%s) while a central is connected' % (round, sig.name))
    if round == 'C2':
        periph = start_peripheral()
        if not bool(get(DEVICE, 'org.bluez.Device1', 'Connected')): connect()
        spin(2)
    if not bool(get(DEVICE, 'org.bluez.Device1', 'Connected')):
        if not connect(): log('FAILED: connect'); continue
    c = find_char()
    if c:
        try:
            if not bool(get(c, 'org.bluez.GattCharacteristic1', 'Notifying')): call(c, 'org.bluez.GattCharacteristic1', 'StartNotify')
        except dbus.DBusException as e: log('Notifying get failed', e)
    spin(1)
    dump_device(round + ' before exit:')
    log(round, 'sending', sig.name, 'to the app, pid', periph.pid)
    periph.send_signal(sig)
    spin(8)
    log(round, 'app exit status', periph.poll())
    dump_device(round + ' 8 s after exit:')
    log(round, 'hci0 UUIDs now', list(map(str, get(PERIPHERAL, 'org.bluez.Adapter1', 'UUIDs'))))
    log(round, 'hci0 ActiveInstances', int(get(PERIPHERAL, 'org.bluez.LEAdvertisingManager1', 'ActiveInstances')))
    c = find_char(); log(round, 'ff01 on the central now', c)
    if bool(get(DEVICE, 'org.bluez.Device1', 'Connected')):
        call(DEVICE, 'org.bluez.Device1', 'Disconnect')
        spin(3)
        dump_device(round + ' after central Disconnect:')
if 'D' in SECTIONS:
    log('===== D. UnregisterApplication while a central is connected')
    if periph.poll() is not None: periph = start_peripheral()
    if not bool(get(DEVICE, 'org.bluez.Device1', 'Connected')): connect()
    spin(2)
    c = find_char()
    if c: call(c, 'org.bluez.GattCharacteristic1', 'StartNotify')
    spin(1)
    periph.send_signal(signal.SIGUSR1)
    spin(8)
    log('D Connected', bool(get(DEVICE, 'org.bluez.Device1', 'Connected')),
        'ServicesResolved', bool(get(DEVICE, 'org.bluez.Device1', 'ServicesResolved')))
    log('D hci0 UUIDs now', list(map(str, get(PERIPHERAL, 'org.bluez.Adapter1', 'UUIDs'))))
    log('D hci0 ActiveInstances', int(get(PERIPHERAL, 'org.bluez.LEAdvertisingManager1', 'ActiveInstances')))
    log('D ff01 on the central now', find_char())
    periph.send_signal(signal.SIGTERM)
    spin(2)
log('DONE')
