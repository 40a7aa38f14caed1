#ifndef BLEKIT_CSOCKETSHIM_H
#define BLEKIT_CSOCKETSHIM_H

#include <stddef.h>
#include <sys/types.h>

/// Receives up to `count` records from a SEQPACKET socket in one system call (recvmmsg, which
/// Swift's Glibc module does not expose): record i lands at buffer + i * record_size, its length
/// in lengths[i]. Never blocks. Returns how many records were received, 0 at end of file (a
/// zero-length record ends the batch and is reported as length 0), or -1 with errno set
/// (EAGAIN when nothing is waiting).
int blekit_receive_records(int descriptor, unsigned char *buffer, size_t record_size, unsigned count, size_t *lengths);

/// As `blekit_receive_records`, for datagrams that must arrive whole: a record longer than
/// `record_size` is not cut silently but marked, truncated[i] = 1, with its whole length in
/// lengths[i] (only its first record_size bytes are in the buffer).
int blekit_receive_whole_records(int descriptor, unsigned char *buffer, size_t record_size, unsigned count, size_t *lengths,
                                 unsigned char *truncated);

#endif
