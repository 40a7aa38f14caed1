// The gateway benchmark's subscriber: counts what a gateway published, as the broker delivers it,
// and how late each message is. BleSim's benchmark crowd stamps every advertising report (its
// manufacturer data ends in the emission time, microseconds since the epoch, big-endian), and both
// gateways copy the manufacturer data into their JSON as hex, so the end-to-end lag is this
// process's clock minus that stamp (same machine, same clock).
//
//   mqtt_count HOST PORT TOPIC OUTPUT
//
// Prints `subscribed` once the broker confirmed the subscription. One line per wall-clock
// second to OUTPUT (flushed): `second messages stamped p50 p99 max`,
// lags in microseconds. Runs until SIGTERM. A separate process written against libmosquitto, so
// that neither gateway's code counts its own messages and the counting costs neither of them.
#include <errno.h>
#include <mosquitto.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile sig_atomic_t stopping = 0;
static FILE *output;
static long current_second = -1;
static long messages = 0;
static int64_t *lags;
static size_t lag_count = 0, lag_capacity = 0;

static int64_t now_microseconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return (int64_t)now.tv_sec * 1000000 + now.tv_nsec / 1000;
}

static int compare(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void flush_second(void) {
    if (current_second < 0) return;
    int64_t p50 = -1, p99 = -1, max = -1;
    if (lag_count > 0) {
        qsort(lags, lag_count, sizeof *lags, compare);
        p50 = lags[lag_count / 2];
        p99 = lags[(lag_count * 99) / 100];
        max = lags[lag_count - 1];
    }
    fprintf(output, "%ld %ld %zu %lld %lld %lld\n", current_second, messages, lag_count,
            (long long)p50, (long long)p99, (long long)max);
    fflush(output);
    messages = 0;
    lag_count = 0;
}

static void roll(int64_t now) {
    long second = (long)(now / 1000000);
    if (second != current_second) {
        flush_second();
        current_second = second;
    }
}

static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// The stamp: the last 16 hex digits of `"manufacturerdata":"…"`, when it has at least 24.
static int stamp_of(const char *payload, int length, int64_t *stamp) {
    static const char key[] = "\"manufacturerdata\"";
    const char *end = payload + length;
    const char *found = NULL;
    for (const char *p = payload; p + sizeof key - 1 <= end; p++) {
        if (memcmp(p, key, sizeof key - 1) == 0) { found = p + sizeof key - 1; break; }
    }
    if (!found) return 0;
    while (found < end && (*found == ' ' || *found == ':')) found++;
    if (found >= end || *found != '"') return 0;
    const char *start = ++found;
    while (found < end && *found != '"') found++;
    if (found >= end || found - start < 24) return 0;
    int64_t value = 0;
    for (const char *p = found - 16; p < found; p++) {
        int digit = hex_value(*p);
        if (digit < 0) return 0;
        value = value * 16 + digit;
    }
    *stamp = value;
    return 1;
}

static void on_message(struct mosquitto *client, void *context, const struct mosquitto_message *message) {
    (void)client; (void)context;
    int64_t now = now_microseconds();
    roll(now);
    messages++;
    int64_t stamp;
    if (message->payloadlen > 0 && stamp_of(message->payload, message->payloadlen, &stamp)) {
        if (lag_count == lag_capacity) {
            lag_capacity = lag_capacity ? lag_capacity * 2 : 16384;
            int64_t *grown = realloc(lags, lag_capacity * sizeof *lags);
            if (!grown) { fprintf(stderr, "mqtt_count: out of memory\n"); exit(1); }
            lags = grown;
        }
        lags[lag_count++] = now - stamp;
    }
}

static void on_connect(struct mosquitto *client, void *context, int result) {
    const char *topic = context;
    if (result != 0) { fprintf(stderr, "mqtt_count: connect refused (%d)\n", result); exit(1); }
    if (mosquitto_subscribe(client, NULL, topic, 0) != MOSQ_ERR_SUCCESS) {
        fprintf(stderr, "mqtt_count: subscribe failed\n");
        exit(1);
    }
}

static void on_subscribe(struct mosquitto *client, void *context, int id, int count, const int *granted) {
    (void)client; (void)context; (void)id; (void)count; (void)granted;
    printf("subscribed\n");
    fflush(stdout);
}

static void on_signal(int signal_number) { (void)signal_number; stopping = 1; }

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: mqtt_count HOST PORT TOPIC OUTPUT\n");
        return 2;
    }
    output = fopen(argv[4], "w");
    if (!output) { fprintf(stderr, "mqtt_count: %s: %s\n", argv[4], strerror(errno)); return 1; }
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    mosquitto_lib_init();
    struct mosquitto *client = mosquitto_new("bench-count", true, argv[3]);
    if (!client) { fprintf(stderr, "mqtt_count: mosquitto_new failed\n"); return 1; }
    mosquitto_connect_callback_set(client, on_connect);
    mosquitto_message_callback_set(client, on_message);
    mosquitto_subscribe_callback_set(client, on_subscribe);
    if (mosquitto_connect(client, argv[1], atoi(argv[2]), 30) != MOSQ_ERR_SUCCESS) {
        fprintf(stderr, "mqtt_count: cannot connect to %s:%s\n", argv[1], argv[2]);
        return 1;
    }
    while (!stopping) {
        int result = mosquitto_loop(client, 200, 1);
        if (result != MOSQ_ERR_SUCCESS && !stopping) {
            fprintf(stderr, "mqtt_count: connection lost (%s)\n", mosquitto_strerror(result));
            return 1;
        }
        roll(now_microseconds());
    }
    flush_second();
    fclose(output);
    mosquitto_destroy(client);
    mosquitto_lib_cleanup();
    return 0;
}
