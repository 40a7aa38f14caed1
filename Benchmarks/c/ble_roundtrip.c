/*
 * ble_roundtrip: the libdbus baseline of the round-trip benchmark (Benchmarks/RoundTripBenchmark).
 *
 * A plain C client of bluetoothd's D-Bus API doing exactly the BlueZ exchanges BleCore does for a
 * write -> notification round trip, so the two can be compared in one run against one BleSim:
 *
 *   ble_roundtrip MODE ADAPTER DEVICE WRITE_CHAR NOTIFY_CHAR COUNT WARMUP
 *
 * Setup (not measured): AddMatch for PropertiesChanged from org.bluez, StartDiscovery, wait for
 * DEVICE, Connect, wait for ServicesResolved, StopDiscovery, then subscribe to NOTIFY_CHAR.
 * MODE:
 *   signal          StartNotify; each round trip is WriteValue(4 bytes, type=request) on
 *                   WRITE_CHAR, its reply, and the PropertiesChanged(Value) signal on NOTIFY_CHAR
 *                   carrying the same 4 bytes.
 *   acquire         AcquireNotify (fd + MTU); each round trip is the WriteValue call and one packet
 *                   read from the SEQPACKET socket.
 *   ingest          StartNotify; one WriteValue starting 0xff makes the simulator push COUNT
 *                   notifications as fast as it can; they are counted as PropertiesChanged signals.
 *   ingest-acquire  The same, counted as packets on the AcquireNotify socket. A reader slower
 *                   than the simulator loses packets there, as with bluetoothd: the burst ends
 *                   after 2 s without a packet and the missing ones are printed as lost=N.
 * WARMUP unmeasured round trips (ingest: one burst of WARMUP notifications, triggered by 0xfe)
 * come first. Prints "ops=N seconds=S cpu_seconds=C": C is this process's CPU time (getrusage,
 * user + system) over the measured operations. Exits non-zero on any mismatch or timeout.
 * Build: cc -O2 ble_roundtrip.c $(pkg-config --cflags --libs dbus-1)
 */
#define _GNU_SOURCE
#include <dbus/dbus.h>
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BLUEZ "org.bluez"
#define CHARACTERISTIC "org.bluez.GattCharacteristic1"
/* The same deadline BleCore gives a GATT operation by default. */
#define CALL_TIMEOUT_MS 10000
#define SETUP_TIMEOUT_S 30.0

static DBusConnection *connection;
static const char *notify_path;
/* What the signal filter saw: the last Value on NOTIFY_CHAR and how many arrived. */
static unsigned char last_value[4];
static int last_length = -1;
static long values_seen;

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_seconds(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return (double)usage.ru_utime.tv_sec + (double)usage.ru_utime.tv_usec / 1e6 +
           (double)usage.ru_stime.tv_sec + (double)usage.ru_stime.tv_usec / 1e6;
}

static void fail(const char *what, DBusError *error) {
    fprintf(stderr, "ble_roundtrip: %s: %s\n", what, error && dbus_error_is_set(error) ? error->message : "failed");
    exit(1);
}

/* Calls PATH's METHOD with no arguments (or those already appended to a message by the caller). */
static DBusMessage *call(DBusMessage *message, const char *what) {
    DBusError error;
    dbus_error_init(&error);
    DBusMessage *reply = dbus_connection_send_with_reply_and_block(connection, message, CALL_TIMEOUT_MS, &error);
    dbus_message_unref(message);
    if (!reply) fail(what, &error);
    return reply;
}

static void call_simple(const char *path, const char *interface, const char *member) {
    DBusMessage *message = dbus_message_new_method_call(BLUEZ, path, interface, member);
    if (!message) fail("out of memory", NULL);
    dbus_message_unref(call(message, member));
}

/* Properties.Get(interface, name) of a boolean; -1 when the object or property is missing. */
static int get_boolean(const char *path, const char *interface, const char *name) {
    DBusMessage *message = dbus_message_new_method_call(BLUEZ, path, "org.freedesktop.DBus.Properties", "Get");
    dbus_message_append_args(message, DBUS_TYPE_STRING, &interface, DBUS_TYPE_STRING, &name, DBUS_TYPE_INVALID);
    DBusError error;
    dbus_error_init(&error);
    DBusMessage *reply = dbus_connection_send_with_reply_and_block(connection, message, CALL_TIMEOUT_MS, &error);
    dbus_message_unref(message);
    if (!reply) {
        dbus_error_free(&error);
        return -1;
    }
    DBusMessageIter iter, variant;
    int result = -1;
    if (dbus_message_iter_init(reply, &iter) && dbus_message_iter_get_arg_type(&iter) == DBUS_TYPE_VARIANT) {
        dbus_message_iter_recurse(&iter, &variant);
        if (dbus_message_iter_get_arg_type(&variant) == DBUS_TYPE_BOOLEAN) {
            dbus_bool_t value;
            dbus_message_iter_get_basic(&variant, &value);
            result = value ? 1 : 0;
        }
    }
    dbus_message_unref(reply);
    return result;
}

/* Polls until PATH's boolean property is true: setup only, so a short pause between tries is fine. */
static void wait_for_true(const char *path, const char *interface, const char *name) {
    double deadline = now_seconds() + SETUP_TIMEOUT_S;
    while (get_boolean(path, interface, name) != 1) {
        if (now_seconds() > deadline) {
            fprintf(stderr, "ble_roundtrip: %s %s never became true\n", path, name);
            exit(1);
        }
        usleep(5000);
    }
}

/* PropertiesChanged("org.bluez.GattCharacteristic1", {"Value": ay, ...}, as) on NOTIFY_CHAR. */
static DBusHandlerResult filter(DBusConnection *conn, DBusMessage *message, void *data) {
    (void)conn;
    (void)data;
    if (!dbus_message_is_signal(message, "org.freedesktop.DBus.Properties", "PropertiesChanged") ||
        !dbus_message_has_path(message, notify_path))
        return DBUS_HANDLER_RESULT_NOT_YET_HANDLED;
    DBusMessageIter iter, dict, entry, variant, bytes;
    if (!dbus_message_iter_init(message, &iter) || dbus_message_iter_get_arg_type(&iter) != DBUS_TYPE_STRING)
        return DBUS_HANDLER_RESULT_NOT_YET_HANDLED;
    const char *interface;
    dbus_message_iter_get_basic(&iter, &interface);
    if (strcmp(interface, CHARACTERISTIC) != 0 || !dbus_message_iter_next(&iter) ||
        dbus_message_iter_get_arg_type(&iter) != DBUS_TYPE_ARRAY)
        return DBUS_HANDLER_RESULT_NOT_YET_HANDLED;
    dbus_message_iter_recurse(&iter, &dict);
    while (dbus_message_iter_get_arg_type(&dict) == DBUS_TYPE_DICT_ENTRY) {
        dbus_message_iter_recurse(&dict, &entry);
        const char *key;
        dbus_message_iter_get_basic(&entry, &key);
        if (strcmp(key, "Value") == 0) {
            dbus_message_iter_next(&entry);
            dbus_message_iter_recurse(&entry, &variant);
            if (dbus_message_iter_get_arg_type(&variant) == DBUS_TYPE_ARRAY &&
                dbus_message_iter_get_element_type(&variant) == DBUS_TYPE_BYTE) {
                const unsigned char *value;
                int length;
                dbus_message_iter_recurse(&variant, &bytes);
                dbus_message_iter_get_fixed_array(&bytes, &value, &length);
                last_length = length;
                memcpy(last_value, value, length < 4 ? (size_t)length : 4);
                values_seen++;
            }
        }
        dbus_message_iter_next(&dict);
    }
    return DBUS_HANDLER_RESULT_HANDLED;
}

/* Sends WriteValue(value, {"type": "request"}) on PATH and returns once it is answered. */
static void write_value(const char *path, const unsigned char *value, int length) {
    DBusMessage *message = dbus_message_new_method_call(BLUEZ, path, CHARACTERISTIC, "WriteValue");
    DBusMessageIter iter, array, dict, entry, variant;
    dbus_message_iter_init_append(message, &iter);
    dbus_message_iter_open_container(&iter, DBUS_TYPE_ARRAY, "y", &array);
    dbus_message_iter_append_fixed_array(&array, DBUS_TYPE_BYTE, &value, length);
    dbus_message_iter_close_container(&iter, &array);
    dbus_message_iter_open_container(&iter, DBUS_TYPE_ARRAY, "{sv}", &dict);
    dbus_message_iter_open_container(&dict, DBUS_TYPE_DICT_ENTRY, NULL, &entry);
    const char *key = "type", *type = "request";
    dbus_message_iter_append_basic(&entry, DBUS_TYPE_STRING, &key);
    dbus_message_iter_open_container(&entry, DBUS_TYPE_VARIANT, "s", &variant);
    dbus_message_iter_append_basic(&variant, DBUS_TYPE_STRING, &type);
    dbus_message_iter_close_container(&entry, &variant);
    dbus_message_iter_close_container(&dict, &entry);
    dbus_message_iter_close_container(&iter, &dict);
    DBusMessage *reply = call(message, "WriteValue");
    if (dbus_message_get_type(reply) != DBUS_MESSAGE_TYPE_METHOD_RETURN) fail("WriteValue: unexpected reply", NULL);
    dbus_message_unref(reply);
}

/* Dispatches until the filter has seen TARGET values in all; a stall of 10 s is a failure. */
static void wait_for_values(long target) {
    while (dbus_connection_dispatch(connection) == DBUS_DISPATCH_DATA_REMAINS) {}
    while (values_seen < target) {
        double before = now_seconds();
        if (!dbus_connection_read_write_dispatch(connection, CALL_TIMEOUT_MS)) fail("connection closed", NULL);
        while (dbus_connection_dispatch(connection) == DBUS_DISPATCH_DATA_REMAINS) {}
        if (values_seen < target && now_seconds() - before >= CALL_TIMEOUT_MS / 1000.0) {
            fprintf(stderr, "ble_roundtrip: %ld of %ld notifications arrived\n", values_seen, target);
            exit(1);
        }
    }
}

static int acquire_notify(const char *path) {
    DBusMessage *message = dbus_message_new_method_call(BLUEZ, path, CHARACTERISTIC, "AcquireNotify");
    DBusMessageIter iter, dict;
    dbus_message_iter_init_append(message, &iter);
    dbus_message_iter_open_container(&iter, DBUS_TYPE_ARRAY, "{sv}", &dict);
    dbus_message_iter_close_container(&iter, &dict);
    DBusMessage *reply = call(message, "AcquireNotify");
    DBusError error;
    dbus_error_init(&error);
    int fd = -1;
    dbus_uint16_t mtu = 0;
    if (!dbus_message_get_args(reply, &error, DBUS_TYPE_UNIX_FD, &fd, DBUS_TYPE_UINT16, &mtu, DBUS_TYPE_INVALID))
        fail("AcquireNotify reply", &error);
    dbus_message_unref(reply);
    return fd;
}

/* One packet from the AcquireNotify socket, with the same 10 s deadline as a call. */
static int read_packet(int fd, unsigned char *buffer, int size) {
    for (;;) {
        struct pollfd descriptor = {.fd = fd, .events = POLLIN};
        int ready = poll(&descriptor, 1, CALL_TIMEOUT_MS);
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) fail("no packet on the AcquireNotify socket", NULL);
        ssize_t count = recv(fd, buffer, (size_t)size, 0);
        if (count < 0 && errno == EINTR) continue;
        if (count <= 0) fail("AcquireNotify socket closed", NULL);
        return (int)count;
    }
}

/* Counts up to target packets; stops early after QUIET_MS without one (they were lost). */
#define QUIET_MS 2000
static long count_packets(int fd, long target, double *last_packet) {
    unsigned char buffer[512];
    long received = 0;
    while (received < target) {
        struct pollfd descriptor = {.fd = fd, .events = POLLIN};
        int ready = poll(&descriptor, 1, QUIET_MS);
        if (ready < 0 && errno == EINTR) continue;
        if (ready == 0) break;
        if (ready < 0) fail("poll on the AcquireNotify socket", NULL);
        ssize_t count = recv(fd, buffer, sizeof buffer, 0);
        if (count < 0 && errno == EINTR) continue;
        if (count <= 0) fail("AcquireNotify socket closed", NULL);
        received++;
        *last_packet = now_seconds();
    }
    return received;
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void encode(unsigned char *value, long index) {
    value[0] = 0x01;
    value[1] = (unsigned char)(index >> 16);
    value[2] = (unsigned char)(index >> 8);
    value[3] = (unsigned char)index;
}

int main(int argc, char **argv) {
    if (argc != 8) {
        fprintf(stderr, "usage: ble_roundtrip signal|acquire|ingest|ingest-acquire ADAPTER DEVICE WRITE_CHAR NOTIFY_CHAR COUNT WARMUP\n");
        return 2;
    }
    const char *mode = argv[1], *adapter = argv[2], *device = argv[3], *write_path = argv[4];
    notify_path = argv[5];
    long count = atol(argv[6]), warmup = atol(argv[7]);
    int acquire = strcmp(mode, "acquire") == 0 || strcmp(mode, "ingest-acquire") == 0;
    int ingest = strncmp(mode, "ingest", 6) == 0;
    if (count <= 0 || warmup < 0 || (!acquire && !ingest && strcmp(mode, "signal") != 0)) {
        fprintf(stderr, "ble_roundtrip: bad arguments\n");
        return 2;
    }

    /* A stalled run must not hang the benchmark: SIGALRM's default action ends the process. */
    alarm(300);
    DBusError error;
    dbus_error_init(&error);
    connection = dbus_bus_get_private(DBUS_BUS_SYSTEM, &error);
    if (!connection) fail("cannot reach the system bus (DBUS_SYSTEM_BUS_ADDRESS)", &error);
    dbus_connection_set_exit_on_disconnect(connection, FALSE);
    dbus_bus_add_match(connection, "type='signal',sender='org.bluez',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged'", &error);
    if (dbus_error_is_set(&error)) fail("AddMatch", &error);
    dbus_connection_add_filter(connection, filter, NULL, NULL);

    call_simple(adapter, "org.bluez.Adapter1", "StartDiscovery");
    double deadline = now_seconds() + SETUP_TIMEOUT_S;
    while (get_boolean(device, "org.bluez.Device1", "Connected") < 0) {
        if (now_seconds() > deadline) fail("the device was never discovered", NULL);
        usleep(5000);
    }
    call_simple(device, "org.bluez.Device1", "Connect");
    wait_for_true(device, "org.bluez.Device1", "ServicesResolved");
    call_simple(adapter, "org.bluez.Adapter1", "StopDiscovery");

    int fd = -1;
    if (acquire) fd = acquire_notify(notify_path);
    else call_simple(notify_path, CHARACTERISTIC, "StartNotify");

    unsigned char value[4], packet[512];
    double start_wall = 0, start_cpu = 0, end_wall = 0, end_cpu = -1;
    long lost = 0, measured = count;
    double *latencies = ingest ? NULL : calloc((size_t)count, sizeof(double));
    if (ingest) {
        for (int phase = 0; phase < 2; phase++) {
            long target = phase == 0 ? warmup : count;
            if (target == 0) continue;
            if (phase == 1) {
                start_wall = now_seconds();
                start_cpu = cpu_seconds();
            }
            unsigned char trigger[4] = {phase == 0 ? 0xfe : 0xff, 0, 0, 0};
            values_seen = 0;
            write_value(write_path, trigger, 4);
            if (acquire) {
                double last_packet = now_seconds();
                long received = count_packets(fd, target, &last_packet);
                if (phase == 1) {
                    /* The quiet second after a loss costs no CPU; the wall time ends at the last packet. */
                    end_cpu = cpu_seconds();
                    end_wall = last_packet;
                    lost = target - received;
                    measured = received;
                }
            } else {
                wait_for_values(target);
            }
        }
    } else {
        for (long index = 0; index < warmup + count; index++) {
            if (index == warmup) {
                start_wall = now_seconds();
                start_cpu = cpu_seconds();
            }
            encode(value, index);
            double sent = now_seconds();
            write_value(write_path, value, 4);
            if (acquire) {
                int length = read_packet(fd, packet, sizeof packet);
                if (length != 4 || memcmp(packet, value, 4) != 0) fail("the packet is not the value written", NULL);
            } else {
                values_seen = 0;
                wait_for_values(1);
                if (last_length != 4 || memcmp(last_value, value, 4) != 0) fail("the notification is not the value written", NULL);
            }
            if (index >= warmup) latencies[index - warmup] = (now_seconds() - sent) * 1e6;
        }
    }
    if (end_cpu < 0) {
        end_cpu = cpu_seconds();
        end_wall = now_seconds();
    }
    double cpu = end_cpu - start_cpu, wall = end_wall - start_wall;
    if (measured == 0) fail("every notification of the burst was lost", NULL);
    printf("ops=%ld seconds=%.6f cpu_seconds=%.6f lost=%ld", measured, wall, cpu, lost);
    if (latencies) {
        qsort(latencies, (size_t)count, sizeof(double), compare_doubles);
        long p99 = (long)((double)count * 0.99);
        if (p99 >= count) p99 = count - 1;
        printf(" p50_us=%.1f p99_us=%.1f", latencies[count / 2], latencies[p99]);
        free(latencies);
    }
    printf("\n");
    fflush(stdout);

    if (fd >= 0) close(fd);
    else call_simple(notify_path, CHARACTERISTIC, "StopNotify");
    call_simple(device, "org.bluez.Device1", "Disconnect");
    dbus_connection_close(connection);
    dbus_connection_unref(connection);
    return 0;
}
