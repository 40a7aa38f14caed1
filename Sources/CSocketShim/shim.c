#define _GNU_SOURCE
#include "CSocketShim.h"

#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

enum { most_records = 64 };

int blekit_receive_records(int descriptor, unsigned char *buffer, size_t record_size, unsigned count, size_t *lengths) {
    return blekit_receive_whole_records(descriptor, buffer, record_size, count, lengths, NULL);
}

int blekit_receive_whole_records(int descriptor, unsigned char *buffer, size_t record_size, unsigned count, size_t *lengths,
                                 unsigned char *truncated) {
    struct mmsghdr headers[most_records];
    struct iovec vectors[most_records];
    if (count > most_records) count = most_records;
    memset(headers, 0, sizeof(headers[0]) * count);
    for (unsigned i = 0; i < count; i++) {
        vectors[i].iov_base = buffer + (size_t)i * record_size;
        vectors[i].iov_len = record_size;
        headers[i].msg_hdr.msg_iov = &vectors[i];
        headers[i].msg_hdr.msg_iovlen = 1;
    }
    // MSG_TRUNC: an AF_UNIX datagram longer than its record reports its whole length (and the
    // flag), so the caller can say how long it was instead of passing on its head.
    int received = recvmmsg(descriptor, headers, count, MSG_DONTWAIT | (truncated ? MSG_TRUNC : 0), NULL);
    if (received <= 0) return received;
    for (int i = 0; i < received; i++) {
        lengths[i] = headers[i].msg_len;
        if (truncated) truncated[i] = (headers[i].msg_hdr.msg_flags & MSG_TRUNC) != 0 || headers[i].msg_len > record_size;
    }
    return received;
}
