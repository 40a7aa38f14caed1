/*
 * dbus_ping: the libdbus baseline of BleKit's D-Bus benchmark (Benchmarks/run).
 *
 * It does, with plain libdbus, what Benchmarks/BleDBusBenchmark does with BleDBus, so the two
 * can be compared in the same run on the same private bus:
 *
 *   dbus_ping serve ADDRESS
 *       Connects, prints its unique name, and answers com.example.Echo.Echo(s) -> s at
 *       /test with a dbus_connection_read_write_dispatch loop, until its stdin closes.
 *   dbus_ping seq ADDRESS DEST CALLS
 *       CALLS sequential calls with dbus_connection_send_with_reply_and_block.
 *   dbus_ping pipe ADDRESS DEST CALLS DEPTH
 *       CALLS calls with DEPTH pending calls (DBusPendingCall) in flight at all times.
 *   dbus_ping loop ADDRESS CALLS DEPTH
 *       Client and server connections in one process on one thread, multiplexed with poll(),
 *       as BleKit runs both of its connections on one GLib loop thread. DEPTH 1 is sequential.
 *   dbus_ping decode FILE ITERATIONS
 *       Demarshals the wire bytes in FILE and walks every value with dbus_message_iter_*,
 *       ITERATIONS times; also times dbus_message_demarshal alone.
 *
 * Call modes print one line "calls=N seconds=S calls_per_second=R cpu_seconds=C" (C: this
 * process's CPU time during the measured calls); decode prints
 * "walk_ms=… demarshal_ms=… values=…". Build: cc -O2 dbus_ping.c $(pkg-config --cflags --libs dbus-1)
 */
#define _GNU_SOURCE
#include <dbus/dbus.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define OBJECT_PATH "/test"
#define INTERFACE "com.example.Echo"
#define METHOD "Echo"
#define PAYLOAD "hello, bluetooth"
/* The same deadline BleKit's calls use (Connection.standardTimeout), so both sides arm one. */
#define CALL_TIMEOUT_MS 10000
#define WARMUP_CALLS 500

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU time of this whole process (every thread), user plus system. */
static double cpu_seconds(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return (double)usage.ru_utime.tv_sec + (double)usage.ru_utime.tv_usec / 1e6 +
           (double)usage.ru_stime.tv_sec + (double)usage.ru_stime.tv_usec / 1e6;
}

static void die(const char *what, DBusError *error) {
    fprintf(stderr, "dbus_ping: %s: %s\n", what, error && dbus_error_is_set(error) ? error->message : "failed");
    exit(2);
}

static DBusConnection *open_bus(const char *address) {
    DBusError error;
    dbus_error_init(&error);
    DBusConnection *connection = dbus_connection_open_private(address, &error);
    if (!connection) die("connect", &error);
    dbus_connection_set_exit_on_disconnect(connection, FALSE);
    if (!dbus_bus_register(connection, &error)) die("Hello", &error);
    return connection;
}

static DBusMessage *new_call(const char *destination) {
    DBusMessage *call = dbus_message_new_method_call(destination, OBJECT_PATH, INTERFACE, METHOD);
    const char *payload = PAYLOAD;
    if (!call || !dbus_message_append_args(call, DBUS_TYPE_STRING, &payload, DBUS_TYPE_INVALID)) die("new call", NULL);
    return call;
}

static void report(long calls, double seconds, double cpu) {
    printf("calls=%ld seconds=%.6f calls_per_second=%.1f cpu_seconds=%.6f\n", calls, seconds, (double)calls / seconds, cpu);
    fflush(stdout);
}

/* ---- server ---------------------------------------------------------------------------- */

/* Answers Echo(s) with the same string, as the BleKit server's handler does. */
static DBusHandlerResult echo_handler(DBusConnection *connection, DBusMessage *message, void *data) {
    (void)data;
    if (!dbus_message_is_method_call(message, INTERFACE, METHOD)) return DBUS_HANDLER_RESULT_NOT_YET_HANDLED;
    DBusMessage *reply;
    const char *text = NULL;
    DBusError error;
    dbus_error_init(&error);
    if (dbus_message_get_args(message, &error, DBUS_TYPE_STRING, &text, DBUS_TYPE_INVALID)) {
        reply = dbus_message_new_method_return(message);
        if (reply) dbus_message_append_args(reply, DBUS_TYPE_STRING, &text, DBUS_TYPE_INVALID);
    } else {
        reply = dbus_message_new_error(message, DBUS_ERROR_UNKNOWN_METHOD, error.message);
        dbus_error_free(&error);
    }
    if (!reply) die("new reply", NULL);
    dbus_connection_send(connection, reply, NULL);
    dbus_message_unref(reply);
    return DBUS_HANDLER_RESULT_HANDLED;
}

static const DBusObjectPathVTable echo_vtable = {.message_function = echo_handler};

static void register_echo(DBusConnection *connection) {
    DBusError error;
    dbus_error_init(&error);
    if (!dbus_connection_try_register_object_path(connection, OBJECT_PATH, &echo_vtable, NULL, &error))
        die("register", &error);
}

/* The parent ends the server by closing our stdin, even when it dies. */
static void *stdin_watchdog(void *unused) {
    (void)unused;
    char buffer[64];
    while (read(0, buffer, sizeof buffer) > 0) {}
    _exit(0);
    return NULL;
}

static int serve(const char *address) {
    DBusConnection *connection = open_bus(address);
    register_echo(connection);
    pthread_t watchdog;
    pthread_create(&watchdog, NULL, stdin_watchdog, NULL);
    printf("%s\n", dbus_bus_get_unique_name(connection));
    fflush(stdout);
    while (dbus_connection_read_write_dispatch(connection, -1)) {}
    return 0;
}

/* ---- sequential client ----------------------------------------------------------------- */

static void one_blocking_call(DBusConnection *connection, const char *destination) {
    DBusError error;
    dbus_error_init(&error);
    DBusMessage *call = new_call(destination);
    DBusMessage *reply = dbus_connection_send_with_reply_and_block(connection, call, CALL_TIMEOUT_MS, &error);
    dbus_message_unref(call);
    if (!reply) die("call", &error);
    const char *text = NULL;
    if (!dbus_message_get_args(reply, &error, DBUS_TYPE_STRING, &text, DBUS_TYPE_INVALID)) die("reply", &error);
    dbus_message_unref(reply);
}

static int sequential(const char *address, const char *destination, long calls) {
    DBusConnection *connection = open_bus(address);
    for (int i = 0; i < WARMUP_CALLS; i++) one_blocking_call(connection, destination);
    double start = now_seconds(), cpu = cpu_seconds();
    for (long i = 0; i < calls; i++) one_blocking_call(connection, destination);
    report(calls, now_seconds() - start, cpu_seconds() - cpu);
    dbus_connection_close(connection);
    dbus_connection_unref(connection);
    return 0;
}

/* ---- pipelined client ------------------------------------------------------------------ */

struct pipeline {
    DBusConnection *connection;
    const char *destination;
    long to_send;
    long outstanding;
    long completed;
};

static void send_one(struct pipeline *pipeline);

static void reply_arrived(DBusPendingCall *pending, void *data) {
    struct pipeline *pipeline = data;
    DBusMessage *reply = dbus_pending_call_steal_reply(pending);
    if (!reply || dbus_message_get_type(reply) != DBUS_MESSAGE_TYPE_METHOD_RETURN) die("pipelined call", NULL);
    DBusError error;
    dbus_error_init(&error);
    const char *text = NULL;
    if (!dbus_message_get_args(reply, &error, DBUS_TYPE_STRING, &text, DBUS_TYPE_INVALID)) die("reply", &error);
    dbus_message_unref(reply);
    dbus_pending_call_unref(pending);
    pipeline->outstanding--;
    pipeline->completed++;
    if (pipeline->to_send > 0) send_one(pipeline);
}

static void send_one(struct pipeline *pipeline) {
    DBusMessage *call = new_call(pipeline->destination);
    DBusPendingCall *pending = NULL;
    if (!dbus_connection_send_with_reply(pipeline->connection, call, &pending, CALL_TIMEOUT_MS) || !pending)
        die("send", NULL);
    dbus_message_unref(call);
    pipeline->to_send--;
    pipeline->outstanding++;
    if (!dbus_pending_call_set_notify(pending, reply_arrived, pipeline, NULL)) die("notify", NULL);
    /* The reply may have been read (and the notify skipped) before set_notify. */
    if (dbus_pending_call_get_completed(pending) && pipeline->outstanding > 0) {
        /* set_notify on a completed call does not fire; handle it here. */
        reply_arrived(pending, pipeline);
    }
}

static void run_pipeline(DBusConnection *connection, const char *destination, long calls, long depth) {
    struct pipeline pipeline = {connection, destination, calls, 0, 0};
    while (pipeline.to_send > 0 && pipeline.outstanding < depth) send_one(&pipeline);
    while (pipeline.completed < calls) {
        if (!dbus_connection_read_write_dispatch(connection, -1)) die("disconnected", NULL);
    }
}

static int pipelined(const char *address, const char *destination, long calls, long depth) {
    DBusConnection *connection = open_bus(address);
    run_pipeline(connection, destination, WARMUP_CALLS, depth);
    double start = now_seconds(), cpu = cpu_seconds();
    run_pipeline(connection, destination, calls, depth);
    report(calls, now_seconds() - start, cpu_seconds() - cpu);
    dbus_connection_close(connection);
    dbus_connection_unref(connection);
    return 0;
}

/* ---- one thread, both connections ------------------------------------------------------ */

/* Reads, writes and dispatches whatever each connection has, sleeping in poll() until one of
 * the two sockets is ready: the shape of a main loop serving both connections. */
static void serve_both(DBusConnection *client, DBusConnection *server, struct pipeline *pipeline, long calls) {
    int client_fd = -1, server_fd = -1;
    dbus_connection_get_unix_fd(client, &client_fd);
    dbus_connection_get_unix_fd(server, &server_fd);
    while (pipeline->completed < calls) {
        struct pollfd fds[2] = {{client_fd, POLLIN, 0}, {server_fd, POLLIN, 0}};
        if (dbus_connection_has_messages_to_send(client)) fds[0].events |= POLLOUT;
        if (dbus_connection_has_messages_to_send(server)) fds[1].events |= POLLOUT;
        if (poll(fds, 2, CALL_TIMEOUT_MS) <= 0) die("poll", NULL);
        DBusConnection *connections[2] = {client, server};
        for (int i = 0; i < 2; i++) {
            if (!fds[i].revents) continue;
            if (!dbus_connection_read_write(connections[i], 0)) die("disconnected", NULL);
            while (dbus_connection_dispatch(connections[i]) == DBUS_DISPATCH_DATA_REMAINS) {}
        }
    }
}

static void run_loop(DBusConnection *client, DBusConnection *server, const char *destination, long calls, long depth) {
    struct pipeline pipeline = {client, destination, calls, 0, 0};
    while (pipeline.to_send > 0 && pipeline.outstanding < depth) send_one(&pipeline);
    serve_both(client, server, &pipeline, calls);
}

static int one_thread(const char *address, long calls, long depth) {
    DBusConnection *server = open_bus(address);
    register_echo(server);
    DBusConnection *client = open_bus(address);
    const char *destination = dbus_bus_get_unique_name(server);
    run_loop(client, server, destination, WARMUP_CALLS, depth);
    double start = now_seconds(), cpu = cpu_seconds();
    run_loop(client, server, destination, calls, depth);
    report(calls, now_seconds() - start, cpu_seconds() - cpu);
    return 0;
}

/* ---- decode ---------------------------------------------------------------------------- */

/* Visits every value, reading each basic one (strings measured with strlen, as a copy into
 * another representation would have to) and each byte array as a fixed array. */
static uint64_t walk(DBusMessageIter *iter, uint64_t *values) {
    uint64_t checksum = 0;
    int type;
    while ((type = dbus_message_iter_get_arg_type(iter)) != DBUS_TYPE_INVALID) {
        (*values)++;
        switch (type) {
        case DBUS_TYPE_STRING:
        case DBUS_TYPE_OBJECT_PATH:
        case DBUS_TYPE_SIGNATURE: {
            const char *text = NULL;
            dbus_message_iter_get_basic(iter, &text);
            checksum += strlen(text);
            break;
        }
        case DBUS_TYPE_ARRAY:
        case DBUS_TYPE_STRUCT:
        case DBUS_TYPE_DICT_ENTRY:
        case DBUS_TYPE_VARIANT: {
            DBusMessageIter sub;
            if (type == DBUS_TYPE_ARRAY && dbus_message_iter_get_element_type(iter) == DBUS_TYPE_BYTE) {
                dbus_message_iter_recurse(iter, &sub);
                const unsigned char *bytes = NULL;
                int count = 0;
                if (dbus_message_iter_get_arg_type(&sub) == DBUS_TYPE_BYTE)
                    dbus_message_iter_get_fixed_array(&sub, &bytes, &count);
                checksum += (uint64_t)count + (count > 0 ? bytes[0] : 0);
                break;
            }
            dbus_message_iter_recurse(iter, &sub);
            checksum += walk(&sub, values);
            break;
        }
        default: {
            DBusBasicValue value;
            memset(&value, 0, sizeof value);
            dbus_message_iter_get_basic(iter, &value);
            checksum += value.u64;
            break;
        }
        }
        dbus_message_iter_next(iter);
    }
    return checksum;
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *samples, int count) {
    qsort(samples, (size_t)count, sizeof *samples, compare_doubles);
    return count % 2 ? samples[count / 2] : (samples[count / 2 - 1] + samples[count / 2]) / 2;
}

static int decode(const char *file, int iterations) {
    FILE *input = fopen(file, "rb");
    if (!input) die("open wire bytes", NULL);
    fseek(input, 0, SEEK_END);
    long size = ftell(input);
    fseek(input, 0, SEEK_SET);
    char *bytes = malloc((size_t)size);
    if (!bytes || fread(bytes, 1, (size_t)size, input) != (size_t)size) die("read wire bytes", NULL);
    fclose(input);

    double *walk_ms = calloc((size_t)iterations, sizeof *walk_ms);
    double *demarshal_ms = calloc((size_t)iterations, sizeof *demarshal_ms);
    uint64_t values = 0, checksum = 0;
    DBusError error;
    dbus_error_init(&error);
    /* One unmeasured round first, as the Swift side does, so page faults are not timed. */
    for (int i = -1; i < iterations; i++) {
        double start = now_seconds();
        DBusMessage *message = dbus_message_demarshal(bytes, (int)size, &error);
        if (!message) die("demarshal", &error);
        double demarshaled = now_seconds();
        DBusMessageIter iter;
        values = 0;
        if (dbus_message_iter_init(message, &iter)) checksum += walk(&iter, &values);
        dbus_message_unref(message);
        double end = now_seconds();
        if (i >= 0) {
            walk_ms[i] = (end - start) * 1000;
            demarshal_ms[i] = (demarshaled - start) * 1000;
        }
    }
    printf("walk_ms=%.4f demarshal_ms=%.4f values=%llu bytes=%ld checksum=%llu\n", median(walk_ms, iterations),
           median(demarshal_ms, iterations), (unsigned long long)values, size, (unsigned long long)checksum);
    free(walk_ms);
    free(demarshal_ms);
    free(bytes);
    return 0;
}

/* ---- main ------------------------------------------------------------------------------ */

static void usage(void) {
    fprintf(stderr,
            "usage: dbus_ping serve ADDRESS\n"
            "       dbus_ping seq ADDRESS DEST CALLS\n"
            "       dbus_ping pipe ADDRESS DEST CALLS DEPTH\n"
            "       dbus_ping loop ADDRESS CALLS DEPTH\n"
            "       dbus_ping decode FILE ITERATIONS\n");
    exit(64);
}

int main(int argc, char **argv) {
    if (argc < 3) usage();
    const char *mode = argv[1];
    if (!strcmp(mode, "serve") && argc == 3) return serve(argv[2]);
    if (!strcmp(mode, "seq") && argc == 5) return sequential(argv[2], argv[3], atol(argv[4]));
    if (!strcmp(mode, "pipe") && argc == 6) return pipelined(argv[2], argv[3], atol(argv[4]), atol(argv[5]));
    if (!strcmp(mode, "loop") && argc == 5) return one_thread(argv[2], atol(argv[3]), atol(argv[4]));
    if (!strcmp(mode, "decode") && argc == 4) return decode(argv[2], atoi(argv[3]));
    usage();
    return 64;
}
